/**
 * The Functions runtime's public surface: a warm pool of sandboxed Deno workers per app
 * release and namespace (`createFunctionPool`), the result and failure types an
 * invocation ends with, and `failureResponse`, which turns a failure into the HTTP error
 * (generic in production, detailed in development).
 */
export {
  createFunctionPool,
  type ContextCall,
  type FunctionPool,
  type FunctionPoolOptions,
  type InvocationMeta,
  type InvokeRequest,
  type InvokeResult,
  type ByteResult,
  type WarmResult,
} from './pool.ts'
export { attemptNotSpent, failureResponse, type CrashReason, type FailureResponse, type FunctionFailure, type FunctionFailureKind, type FunctionResult } from './failures.ts'
export { DENIED_IPV4_RANGES, DENIED_IPV6_ADDRESSES } from './sandbox.ts'
export { FILE_INLINE_BYTES, FILE_PIECE_BYTES } from './protocol.ts'
export { resolveDenoBinary } from './deno-binary.ts'
export { createFunctionHost, type EmailContextCall, type FunctionHost, type JobsContextCall } from './host.ts'
export { callFunction, callRoute } from './routes.ts'
export { logRoutes } from './log-routes.ts'
export { LOG_FILTERS, readAppLogs } from './app-logs.ts'
export { listFunctionLogs, MAX_LOG_PAGE, purgeFunctionLogs } from './context-log.ts'
export { devInvokeRoutes, invokeDevFunction, type DevInvocation, type DevInvokeDeps, type DevInvokeIntegrations } from './dev-invoke.ts'
export { createBrowserSdkScripts, callableFunctions, type BrowserSdkScripts } from './browser-sdk.ts'
