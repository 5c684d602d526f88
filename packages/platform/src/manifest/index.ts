// Public surface of the manifest feature: validate service.yaml (schema version 3) into
// a Manifest with defaults applied, the problem code catalog, and the runtime SDK
// version rules other features (deploy, jobs, functions) share.

export { validateManifest } from './validate.ts'
export { MANIFEST_PROBLEMS, type ProblemCode } from './codes.ts'
export { MINIMUM_SDK_VERSION, PLATFORM_SDK_VERSION, SDK_GATES, parseSdkVersion, sdkAtLeast, type SdkGate } from './sdk-versions.ts'
export { DEFAULT_ACCESS_TOKEN_SECRET } from './provides-authorization.ts'
export { MAX_EVENT_FAKE_BYTES, MAX_OPERATION_FAKE_BYTES } from './provides-operations.ts'
export type {
  AppDeclaration,
  AppVisibility,
  CronDeclaration,
  AiDeclaration,
  EmailDeclaration,
  FunctionAccess,
  FunctionDeclaration,
  FunctionRoute,
  IntegrationCapability,
  IntegrationContract,
  IntegrationCredential,
  IntegrationEvent,
  IntegrationOperation,
  IntegrationSlot,
  IntegrationSync,
  JsonObject,
  JsonSchema,
  JsonValue,
  Manifest,
  ManifestResult,
  OAuth2Authorization,
  Problem,
  PublishedIntegration,
  QueueDeclaration,
  RouteMethod,
  SearchDeclaration,
  Severity,
  SlotAccount,
  SlotEvents,
  TextSearchLanguage,
  ValidationContext,
} from './types.ts'
