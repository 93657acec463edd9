// The console's form renderer: react-jsonschema-form (@rjsf/core) with its Ajv 8 validator, bundled by
// build.mjs into ../vendor/forms.js and exposed as `window.AgentturnForms`. The console itself is plain
// DOM code; only the form body of a PENDING card is React.
//
// Why rjsf: it renders every schema string (title, description, enum value) as a React text child, which
// React escapes, so a hostile schema can never become markup (markdown descriptions are opt-in through a
// uiSchema option, and the console never passes a uiSchema that enables it).
import { createRoot } from "react-dom/client";
import { useState } from "react";
import Form from "@rjsf/core";
import { transformErrorsFor } from "./form_messages.mjs";
// Draft 2020-12, as the server validates (agentturn/validation.py), without compiling schemas to code: the
// page's CSP has no 'unsafe-eval' (validator.mjs; tests/differential/test_browser_validator.py).
import { validator } from "./validator.mjs";

// Server errors come as JSON Pointers into the submitted data ("/affectedSystem", "/address/zip");
// rjsf wants them as a nested ErrorSchema ({affectedSystem: {__errors: [...]}}). Errors at the root, or on
// a path the schema does not declare, cannot sit next to a field: the caller shows those on the card.
function pointerSegments(pointer) {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) return null;
  return pointer
    .slice(1)
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function declares(schema, segments) {
  let node = schema;
  for (const segment of segments) {
    if (!node || typeof node !== "object") return false;
    if (node.properties && Object.hasOwn(node.properties, segment)) node = node.properties[segment];
    else if (node.items && /^\d+$/.test(segment)) node = node.items;
    else return false;
  }
  return true;
}

export function toErrorSchema(schema, problems) {
  const errorSchema = {};
  const unplaced = [];
  for (const problem of problems || []) {
    const segments = pointerSegments(String(problem.path ?? ""));
    if (!segments || segments.length === 0 || !declares(schema, segments)) {
      unplaced.push(problem);
      continue;
    }
    let node = errorSchema;
    for (const segment of segments) node = node[segment] ??= {};
    (node.__errors ??= []).push(String(problem.message));
  }
  return { errorSchema, unplaced };
}

function CardForm(props) {
  const [formData, setFormData] = useState(props.formData ?? {});
  const { errorSchema } = toErrorSchema(props.schema, props.serverErrors);
  return (
    <Form
      schema={props.schema}
      // Only option labels (ui:enumNames, from the schema's x-enumNames): nothing that renders markup.
      uiSchema={props.uiSchema}
      validator={validator}
      // A `oneOf` of `{const, title}` choices is a drop-down with nothing chosen yet, as an `enum` is: a person
      // picks an option, none is picked for them.
      experimental_defaultFormStateBehavior={{ constAsDefaults: "skipOneOf" }}
      formData={formData}
      idPrefix={props.idPrefix}
      noValidate={Boolean(props.noValidate)}
      // Ajv's messages next to the fields instead of the browser's own bubbles, so client and server
      // errors look and sit alike.
      noHtml5Validate
      showErrorList={false}
      focusOnFirstError
      omitExtraData
      extraErrors={errorSchema}
      // The console's own checks say what the server would say, in the same words.
      transformErrors={transformErrorsFor(props.schema)}
      disabled={Boolean(props.busy)}
      onChange={(event) => {
        setFormData(event.formData);
        props.onChange?.(event.formData);
      }}
      onSubmit={(event) => props.onSubmit(event.formData ?? {})}
    >
      <div className="form-actions">
        <button type="submit" className="primary" disabled={Boolean(props.busy)}>
          {props.submitLabel || "Submit"}
        </button>
        {props.onDecline ? (
          <button type="button" className="secondary" disabled={Boolean(props.busy)} onClick={() => props.onDecline()}>
            {props.declineLabel || "Decline"}
          </button>
        ) : null}
      </div>
    </Form>
  );
}

/** Mounts a form into `container`; returns {update(props), unmount()}. Typed input survives updates. */
export function mount(container, initialProps) {
  const root = createRoot(container);
  let current = { ...initialProps };
  const render = () => root.render(<CardForm {...current} />);
  render();
  return {
    update(next) {
      current = { ...current, ...next };
      render();
    },
    unmount() {
      root.unmount();
    },
  };
}

window.AgentturnForms = Object.freeze({ mount, toErrorSchema, library: "@rjsf/core" });
