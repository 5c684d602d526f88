// The catalog of every problem code the service.yaml validator can report. Codes are
// stable strings that tools and agents switch on; the meaning here is the human summary
// and the severity is fixed per code, so a code is always an error or always a warning.

export const MANIFEST_PROBLEMS = {
  // YAML itself
  MANIFEST_YAML_SYNTAX: { severity: 'error', meaning: 'The file is not well-formed YAML, or uses YAML the parser cannot resolve (such as an unknown tag).' },
  MANIFEST_YAML_DUPLICATE_KEY: { severity: 'error', meaning: 'A mapping lists the same key twice.' },
  MANIFEST_YAML_MULTIPLE_DOCUMENTS: { severity: 'error', meaning: 'The file holds more than one YAML document (a second "---").' },
  MANIFEST_YAML_ALIAS: { severity: 'error', meaning: 'A YAML alias (*name) is used; write the value out instead.' },
  MANIFEST_ROOT_NOT_MAPPING: { severity: 'error', meaning: 'The file is empty or its top level is not a mapping of fields.' },

  // Shape of fields and values
  MANIFEST_UNKNOWN_FIELD: { severity: 'error', meaning: 'A field that the schema does not define.' },
  MANIFEST_MISSING_FIELD: { severity: 'error', meaning: 'A required field is absent or has no value.' },
  MANIFEST_WRONG_TYPE: { severity: 'error', meaning: 'A value has the wrong type (for example a number where a string is required).' },
  MANIFEST_NOT_INTEGER: { severity: 'error', meaning: 'A number is not written as a whole number where an integer is required.' },
  MANIFEST_OUT_OF_RANGE: { severity: 'error', meaning: 'A number is outside its allowed range.' },
  MANIFEST_EMPTY_STRING: { severity: 'error', meaning: 'A required string is empty or only whitespace.' },
  MANIFEST_TOO_LONG: { severity: 'error', meaning: 'A string is longer than allowed.' },
  MANIFEST_INVALID_CHOICE: { severity: 'error', meaning: 'A value is not one of the allowed values.' },
  MANIFEST_INVALID_FORMAT: { severity: 'error', meaning: 'A name or identifier does not match its required pattern.' },
  MANIFEST_EMPTY_ARRAY: { severity: 'error', meaning: 'An array must have at least one entry.' },
  MANIFEST_TOO_MANY_ITEMS: { severity: 'error', meaning: 'An array has more entries than allowed.' },
  MANIFEST_DUPLICATE_NAME: { severity: 'error', meaning: 'Two declarations share a name that must be unique; reported on the second.' },
  MANIFEST_DUPLICATE_VALUE: { severity: 'error', meaning: 'A list repeats a value that must appear once.' },

  // Versions
  MANIFEST_SCHEMA_VERSION_UNSUPPORTED: { severity: 'error', meaning: 'schemaVersion is not 3, the only supported version.' },
  MANIFEST_SCHEMA_VERSION_TOO_LOW: { severity: 'error', meaning: 'A feature (integration contract, Function routes) needs schemaVersion 3.' },
  MANIFEST_SDK_VERSION_INVALID: { severity: 'error', meaning: 'runtime.sdk.version is not a plain x.y.z version.' },
  MANIFEST_SDK_VERSION_UNSUPPORTED: { severity: 'error', meaning: 'runtime.sdk.version is older than 2.0.0 or newer than this platform supports.' },
  MANIFEST_SDK_VERSION_TOO_LOW: { severity: 'error', meaning: 'A declared feature needs a newer runtime.sdk.version.' },

  // Functions and routes
  MANIFEST_ENTRYPOINT_INVALID: { severity: 'error', meaning: 'A Function entrypoint is not a relative functions/….ts path.' },
  MANIFEST_ENTRYPOINT_NOT_FOUND: { severity: 'error', meaning: 'A Function entrypoint file is not in the bundle.' },
  MANIFEST_ROUTE_PATH_INVALID: { severity: 'error', meaning: 'A Function route path is malformed.' },
  MANIFEST_ROUTE_PATH_RESERVED: { severity: 'error', meaning: 'A Function route path is, or is under, a prefix the platform reserves.' },
  MANIFEST_ROUTE_CONFLICT: { severity: 'error', meaning: 'Two routes share a method and the same path shape.' },
  MANIFEST_ROUTES_ON_SYSTEM_FUNCTION: { severity: 'error', meaning: 'A system Function declares routes; system Functions are never reachable over HTTP.' },
  MANIFEST_FUNCTION_NOT_DECLARED: { severity: 'error', meaning: 'A reference names a Function that functions does not declare.' },
  MANIFEST_FUNCTION_NOT_SYSTEM: { severity: 'error', meaning: 'A reference needs a Function with access: system.' },

  // Schedules
  MANIFEST_CRON_SCHEDULE_INVALID: { severity: 'error', meaning: 'A schedule is not a valid five-field cron expression.' },
  MANIFEST_TIMEZONE_INVALID: { severity: 'error', meaning: 'A timezone is not an IANA time zone name.' },

  // Data search
  MANIFEST_SEARCH_ID_NOT_SELECTED: { severity: 'error', meaning: 'A search does not select the id column.' },
  MANIFEST_SEARCH_MODE_MISSING: { severity: 'error', meaning: 'A search declares neither fullText nor vector.' },

  // Integrations (consumer slots and provider contract)
  MANIFEST_SLOT_EVENTS_NOT_ALLOWED: { severity: 'error', meaning: 'A slot with account: calling_user declares events; only account: app slots receive events.' },
  MANIFEST_SECRET_NAME_CONFLICT: { severity: 'error', meaning: "A credential name equals one of the app's own secret names, or the OAuth access-token name equals a credential or app secret name." },
  MANIFEST_AUTHORIZATION_URL_INVALID: { severity: 'error', meaning: 'authorizationUrl is not an absolute https URL (http only for localhost).' },
  MANIFEST_CAPABILITY_NOT_DECLARED: { severity: 'error', meaning: 'An operation or event names a capability the contract does not declare.' },
  MANIFEST_JSON_SCHEMA_INVALID: { severity: 'error', meaning: 'An input or output schema is not a usable JSON Schema.' },
  MANIFEST_JSON_VALUE_INVALID: { severity: 'error', meaning: 'A value cannot be represented as JSON (non-finite number, non-scalar key).' },
  MANIFEST_FAKE_TOO_LARGE: { severity: 'error', meaning: 'A fake value is larger than allowed when serialized as JSON (16 KiB for operations, 64 KiB for events).' },
  MANIFEST_INTEGRATION_NAME_TAKEN: { severity: 'error', meaning: 'Another active app of the organisation already publishes this integration name.' },

  // Warnings (only when published integrations are known)
  MANIFEST_INTEGRATION_NOT_PUBLISHED: { severity: 'warning', meaning: 'No other active app publishes the integration a slot names.' },
  MANIFEST_CAPABILITY_NOT_OFFERED: { severity: 'warning', meaning: 'A slot requests a capability the published integration does not offer.' },
  MANIFEST_EVENT_TYPE_NOT_OFFERED: { severity: 'warning', meaning: 'A slot subscribes to an event type the published integration does not declare.' },
} as const

export type ProblemCode = keyof typeof MANIFEST_PROBLEMS
