"""``agentturn dev``: the deployed handlers on an embedded AWS emulator, with the browser console.

Nothing here is a second implementation of the runtime. moto's server plays DynamoDB, SQS and S3 on
127.0.0.1; a local gateway turns HTTP requests into API Gateway (HTTP API, payload 2.0) events for the
same ``functions/run`` and ``functions/submit`` handlers that Lambda runs; a worker loop long-polls the
queue and hands real-shaped SQS events to ``functions/worker``; a timer plays EventBridge for
``functions/sweeper``. Only the parts AWS itself would provide (the JWT authorizer, the event source
mapping, the schedule) are emulated here.
"""

from __future__ import annotations
