"""Form definitions and the two ways a form is asked for: the control tool and the FormRequired signal."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from agentturn.agents.tools import Tool, ToolContext
from agentturn.forms.checking import problems_in
from agentturn.state.approvers import Approvers, DeadlineAction

REQUEST_USER_INPUT = "request_user_input"


def _check_default_answer(form_key: str, schema: dict[str, Any], approvers: Approvers) -> None:
    """A form's default answer at the deadline is data its schema accepts, checked now by the one validator
    that checks a person's answer; a verdict is no answer to a form."""
    at = approvers.at_deadline
    if at is None or not at.is_default_answer:
        return
    if at.action is not DeadlineAction.ANSWER or at.data is None:
        raise ValueError(
            f"form {form_key!r}: a form's default answer is AtDeadline.answer(data), not {at.action.value}"
        )
    problems = problems_in(schema, at.data)
    if problems:
        listed = "; ".join(f"{p['path'] or '/'}: {p['message']}" for p in problems)
        raise ValueError(f"form {form_key!r}: the default answer at the deadline does not fit the form ({listed})")


class FormDefinition:
    """A form: a key the model may choose, a description of when to use it, and a JSON Schema.

    Immutable. The schema is deep-copied on the way in and on the way out, so neither the caller who built
    it nor anyone reading it can change what a waiting turn has frozen.
    """

    __slots__ = ("_approvers", "_description", "_form_key", "_schema")

    def __init__(
        self, form_key: str, description: str, schema: Mapping[str, Any], *, approvers: Approvers | None = None
    ) -> None:
        if not isinstance(form_key, str) or not form_key.strip():
            raise ValueError("form_key must be a non-blank string")
        if not isinstance(description, str) or not description.strip():
            raise ValueError(f"form {form_key!r}: description must be a non-blank string")
        if not isinstance(schema, Mapping):
            raise ValueError(f"form {form_key!r}: schema must be a JSON object")  # noqa: TRY004 - the design's error
        frozen = copy.deepcopy(dict(schema))
        # Imported here, not at module level: the validator brings jsonschema (≈ 0.1 s of a cold start), which
        # a process that never defines a form (the sweeper, the retention handler, reads) does not need.
        from agentturn.forms.schema_rules import SchemaRefusedError
        from agentturn.forms.validation import form_validator

        try:
            # Checked and compiled once here (and cached): a schema that cannot be checked safely, or not the
            # way the console checks it, is refused now rather than when a person submits.
            form_validator(frozen)
        except SchemaRefusedError as exc:
            raise ValueError(f"form {form_key!r}: {exc}") from exc
        if frozen.get("type") != "object":
            raise ValueError(f'form {form_key!r}: schema must have "type": "object"')
        if approvers is not None:
            if not isinstance(approvers, Approvers):
                raise TypeError(f"form {form_key!r}: approvers must be agentturn.Approvers")
            if approvers.quorum != 1:
                # A form is filled in once: its answer is the data, not a vote.
                raise ValueError(f"form {form_key!r}: a form is answered by one person (quorum=1)")
            _check_default_answer(form_key, frozen, approvers)
        self._form_key = form_key
        self._description = description
        self._approvers = approvers
        self._schema = frozen

    @property
    def form_key(self) -> str:
        return self._form_key

    @property
    def description(self) -> str:
        return self._description

    @property
    def schema(self) -> dict[str, Any]:
        return copy.deepcopy(self._schema)

    @property
    def approvers(self) -> Approvers | None:
        """Who may fill it in besides the turn's owner (None: the owner alone)."""
        return self._approvers

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, "_schema"):
            raise AttributeError("FormDefinition is immutable")
        object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FormDefinition):
            return NotImplemented
        return (self._form_key, self._description, self._schema, self._approvers) == (
            other._form_key,
            other._description,
            other._schema,
            other._approvers,
        )

    def __hash__(self) -> int:
        return hash((self._form_key, self._description))

    def __repr__(self) -> str:
        return f"FormDefinition(form_key={self._form_key!r}, description={self._description!r})"


class FormRequired(Exception):
    """Raised by a business tool, before any side effect, when it needs a person to fill in a form.

    The runner suspends the turn and, once the form is submitted, replays the whole tool with
    ``ToolContext.current().submitted_form_data`` holding the data and ``form_submitted`` true
    (:func:`require_form` does both halves).
    """

    def __init__(self, form: FormDefinition) -> None:
        if not isinstance(form, FormDefinition):
            raise TypeError("FormRequired needs a FormDefinition")
        super().__init__(f"form {form.form_key!r} required")
        self.form = form


def require_form(form: FormDefinition) -> dict[str, Any]:
    """Inside a business tool: the data a person submitted for ``form``, or ask for it.

    On the replay after the submission this returns the data (``{}`` too, for a form whose fields are all
    optional); otherwise it raises :class:`FormRequired`, so call it before any side effect.
    """
    context = ToolContext.current()
    if context.form_submitted:
        return dict(context.submitted_form_data)
    raise FormRequired(form)


def _never_runs(arguments: dict[str, Any]) -> Any:
    raise RuntimeError(f"{REQUEST_USER_INPUT} is a control tool; the runner handles its calls")


class UserInputTool(Tool):
    """The control tool ``request_user_input(formKey)``. The model sees keys and descriptions, never schemas."""

    def __init__(self, forms: Iterable[FormDefinition]) -> None:
        form_list = list(forms)
        if not form_list:
            raise ValueError(f"{REQUEST_USER_INPUT} needs at least one form")
        by_key: dict[str, FormDefinition] = {}
        for form in form_list:
            if not isinstance(form, FormDefinition):
                raise TypeError(f"expected FormDefinition, got {type(form).__name__}")
            if form.form_key in by_key:
                raise ValueError(f"duplicate formKey {form.form_key!r}")
            by_key[form.form_key] = form
        lines = [
            "Ask the user to fill in a structured form before continuing. "
            "Choose the formKey whose description matches what is missing; do not guess missing fields.",
            "Available forms:",
        ]
        lines += [f"- {form.form_key}: {form.description}" for form in form_list]
        parameters = {
            "type": "object",
            "properties": {
                "formKey": {
                    "type": "string",
                    "enum": list(by_key),
                    "description": "Key of the form to show to the user.",
                }
            },
            "required": ["formKey"],
            "additionalProperties": False,
        }
        super().__init__(
            name=REQUEST_USER_INPUT,
            description="\n".join(lines),
            function=_never_runs,
            parameters=parameters,
            metadata={"forms": {key: form.schema for key, form in by_key.items()}},
        )
        self._forms = by_key

    @property
    def forms(self) -> dict[str, FormDefinition]:
        return dict(self._forms)

    def form(self, form_key: str) -> FormDefinition | None:
        return self._forms.get(form_key)
