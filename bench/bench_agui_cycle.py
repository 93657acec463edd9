"""AWS requests of one support-ticket form cycle through AG-UI, against the same cycle through the HTTP routes.

Both on the same moto server, through the deployed handlers (``functions/*/app.py``), every client attached to
one counter (``bench/_aws_counter.py``):

* HTTP: ``POST /conversations/{id}/turns`` (run) → ``POST .../submit`` (submit) → SQS → worker → ``GET /turns``;
* AG-UI: ``POST /ag-ui/support-agent`` with the message (run handler, the interrupt) → ``POST /ag-ui/support-agent``
  with ``resume`` (run handler: the decision and the resumed turn in the same request, no queue).

Dollars per million cycles at the list prices of ``bench/bench_all.py`` (DynamoDB request units as the counter
accounts them, S3, SQS, Lambda invocations, API Gateway HTTP API requests; Lambda duration is not counted, as
everywhere in bench/): the HTTP path makes 3 HTTP API requests per cycle (start, submit, the client's GET), AG-UI
through the HTTP API 2, AG-UI through the streamed function URL none (a function URL has no request price; its
streamed bytes are billed only past 6 MB a response).

    python -m bench.bench_agui_cycle [--cycles 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from typing import Any

from bench._aws_counter import AwsCounter
from bench._aws_setup import client, ours_resources
from bench._handlers import DATA, TEXT, _event, lambda_context, quiet_stdout
from bench._moto import MotoServer, use_fake_aws_env
from bench.bench_all import PRICES, cost_per_million

#: API Gateway HTTP API requests per cycle, by path (see the module's text).
HTTP_API_REQUESTS = {"http": 3, "ag-ui via HTTP API": 2, "ag-ui via function URL": 0}
LAMBDA_INVOCATIONS = {"http": 4, "ag-ui": 2}


def _ag_ui_event(body: dict[str, Any]) -> dict[str, Any]:
    event = _event("http_start_turn.json", "/ag-ui/support-agent", {"agentId": "support-agent"}, body, None)
    event["routeKey"] = event["requestContext"]["routeKey"] = "POST /ag-ui/{agentId}"
    return event


def _events(response: dict[str, Any]) -> list[dict[str, Any]]:
    assert response["statusCode"] == 200, response
    frames = [f for f in response["body"].split("\n\n") if f]
    return [json.loads(f.removeprefix("data: ")) for f in frames]


def ag_ui_cycle(run_app: Any) -> int:
    """One form cycle through AG-UI; the number of events the client received."""
    thread = f"agui-{uuid.uuid4().hex[:10]}"
    asked = _events(
        run_app.handler(
            _ag_ui_event(
                {"threadId": thread, "runId": "r1", "messages": [{"id": "u", "role": "user", "content": TEXT}]}
            ),
            lambda_context("run", 29_000),
        )
    )
    [interrupt] = asked[-1]["outcome"]["interrupts"]
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": DATA}]
    answered = _events(
        run_app.handler(
            _ag_ui_event({"threadId": thread, "runId": "r2", "messages": [], "resume": resume}),
            lambda_context("run", 29_000),
        )
    )
    assert answered[-1]["outcome"] == {"type": "success"}, answered[-1]
    return len(asked) + len(answered)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=5)
    args = parser.parse_args()
    use_fake_aws_env()
    from bench._handler_side import aws_handler_cycle

    with MotoServer() as moto:
        plain = client("dynamodb", moto.endpoint_url)
        counter = AwsCounter(accounting_client=plain)
        resources = ours_resources(moto.endpoint_url, AwsCounter(), plain)
        http = aws_handler_cycle(resources, moto.endpoint_url, counter)
        figures: dict[str, list[dict[str, Any]]] = {"http": [], "ag-ui": []}
        events: list[int] = []
        for n in range(args.cycles + 1):
            counter.reset()
            started = time.perf_counter()
            http(f"http-{uuid.uuid4().hex[:10]}", TEXT, DATA)
            tally = counter.reset().as_dict()
            if n:  # the first cycle warms the containers
                figures["http"].append({**tally, "wall_ms": (time.perf_counter() - started) * 1000})
            started = time.perf_counter()
            with quiet_stdout():
                events.append(ag_ui_cycle(http.run_app))
            tally = counter.reset().as_dict()
            if n:
                figures["ag-ui"].append({**tally, "wall_ms": (time.perf_counter() - started) * 1000})
        # One more cycle of each in accounting mode: the write and read units DynamoDB would bill, from the items'
        # sizes (it reads every written item again, so its wall time is not measured).
        counter.accounting = True
        counter.reset()
        http(f"http-{uuid.uuid4().hex[:10]}", TEXT, DATA)
        units = {"http": counter.reset().as_dict()}
        with quiet_stdout():
            ag_ui_cycle(http.run_app)
        units["ag-ui"] = counter.reset().as_dict()
        counter.accounting = False
    summary = {
        name: {
            "dynamodb_requests": statistics.median(t["dynamodb_requests"] for t in tallies),
            "sqs_requests": statistics.median(t["sqs_requests"] for t in tallies),
            "s3_requests": statistics.median(t["s3_requests"] for t in tallies),
            "write_units": units[name]["write_units"],
            "read_units": units[name]["read_units"],
            "dynamodb_by_operation": tallies[-1]["dynamodb_by_operation"],
            "sqs_by_operation": tallies[-1]["sqs_by_operation"],
            "s3_by_operation": tallies[-1].get("s3_by_operation", {}),
            "lambda_invocations": LAMBDA_INVOCATIONS[name],
            "wall_ms_median": statistics.median(t["wall_ms"] for t in tallies),
        }
        for name, tallies in figures.items()
    }
    summary["ag-ui"]["events_per_cycle"] = statistics.median(events)
    dollars: dict[str, dict[str, float]] = {}
    for path, api_requests in HTTP_API_REQUESTS.items():
        figures_of = summary["http" if path == "http" else "ag-ui"]
        config = {
            "lambda_invocations_per_cycle": figures_of["lambda_invocations"],
            "http_requests_per_cycle": api_requests,
        }
        dollars[path] = {k: round(v, 2) for k, v in cost_per_million(figures_of, config).items()}
    print(json.dumps({**summary, "dollars_per_million_cycles": dollars, "prices": PRICES}, indent=1))


if __name__ == "__main__":
    main()
