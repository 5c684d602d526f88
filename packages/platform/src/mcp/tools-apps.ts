/**
 * The tools an agent builds and ships an app with: list and create apps, validate and deploy
 * bundles (production or a development session), releases, logs, secrets, cron and app
 * access tokens. Each calls the function its owner API route calls, with the same role.
 */
import { z } from 'zod'
import { ServiceError } from '../lib/errors.ts'
import { appsOf, appView, checkVisibility, createApp } from '../apps/apps.ts'
import { deployBundle, listReleases, releaseView, validateDeploy } from '../deploy/deploy.ts'
import { checkDevName } from '../namespaces/dev-names.ts'
import { appForRole, createOwnerAppToken, requestAppToken, roleFrom } from '../identity/index.ts'
import { readAppLogs } from '../functions/index.ts'
import { listAppSecrets, setAppSecret } from '../secrets/index.ts'
import { listAppCrons, triggerCronRun } from '../cron/index.ts'
import { BUILDER, defineTool, FULL_ONLY, type ToolContext, type ToolDefinition } from './tool.ts'
import { personOf, personOnApp, scopedAppId } from './scope.ts'
import { surfaceOf } from './principal.ts'
import { appId, bundleBody, bundleFiles, sessionId } from './fields.ts'

/** The namespace a tool names: a development session, or production ('') without one. */
function devNameOf(session: string | undefined): string {
  return session === undefined ? '' : checkDevName(session)
}

/** Codes that mean "this bundle has problems", which validate_app answers rather than fails with. */
const BUNDLE_PROBLEMS = new Set(['BUNDLE_INVALID', 'MANIFEST_INVALID', 'MANIFEST_APP_MISMATCH'])

async function editableApp(context: ToolContext, id: string) {
  const user = await personOnApp(context, id)
  return { user, app: await appForRole(context.deps.db, user, id, 'edit') }
}

export const appTools: ToolDefinition[] = [
  defineTool({
    name: 'list_apps',
    description: 'List the apps you hold a role on (use, edit or administer), with their URL, visibility, status and active release. ' +
      'A token for one app lists that app only.',
    input: z.object({}).strict(),
    surfaces: BUILDER,
    readOnly: true,
    async run(context) {
      const user = personOf(context)
      const only = scopedAppId(context)
      const apps = await appsOf({ db: context.deps.db, urls: context.deps.urls, access: { roleFrom } }, user)
      return { apps: only === null ? apps : apps.filter((app) => app.id === only) }
    },
  }),
  defineTool({
    name: 'create_app',
    description: 'Create an app you own. slug: 3 to 40 lowercase letters, digits or single hyphens, starting with a letter; ' +
      'its URL is https://<slug>.<base domain>. visibility: private (default; only people with a grant) or public.',
    input: z.object({
      slug: z.string().min(3).max(40),
      name: z.string().min(1).max(80).optional(),
      visibility: z.enum(['public', 'private']).optional(),
    }).strict(),
    surfaces: FULL_ONLY,
    readOnly: false,
    async run(context, input) {
      const user = personOf(context)
      const app = await createApp(context.deps.db, user, { slug: input.slug, name: input.name, visibility: checkVisibility(input.visibility ?? 'private') })
      return { app: appView(app, context.deps.urls.app(app.slug)) }
    },
  }),
  defineTool({
    name: 'validate_app',
    description: 'Check an app bundle (service.yaml, functions/**.ts, public/**, database/migrations/NNNN_name.sql) as a deploy ' +
      'would, changing nothing. Answers {valid: true, files, sdkVersion, warnings} or {valid: false, code, message, problems, ' +
      'warnings}, each manifest problem with its line and column. Needs Edit on the app.',
    input: z.object({ appId, sessionId, files: bundleFiles }).strict(),
    surfaces: BUILDER,
    readOnly: true,
    async run(context, input) {
      const { app } = await editableApp(context, input.appId)
      const devName = devNameOf(input.sessionId)
      try {
        return await validateDeploy(context.deps, { app, devName, body: bundleBody(input.files) })
      } catch (error) {
        if (!(error instanceof ServiceError) || !BUNDLE_PROBLEMS.has(error.code)) throw error
        const details = (error.details ?? {}) as { errors?: unknown[]; problems?: unknown[]; warnings?: unknown[] }
        return { valid: false, code: error.code, message: error.message, problems: details.errors ?? details.problems ?? [], warnings: details.warnings ?? [] }
      }
    },
  }),
  defineTool({
    name: 'deploy_app',
    description: 'Deploy a bundle as the app\'s new production release, or, with sessionId, to that development session (its own ' +
      'schema, secrets, logs and releases; created on its first deploy). Migrations run in one transaction with the release: ' +
      'a failure leaves the previous release serving. Needs Edit on the app.',
    input: z.object({ appId, sessionId, files: bundleFiles }).strict(),
    surfaces: BUILDER,
    readOnly: false,
    async run(context, input) {
      const { user, app } = await editableApp(context, input.appId)
      const devName = devNameOf(input.sessionId)
      const result = await deployBundle(context.deps, { app, user, body: bundleBody(input.files), devName })
      return {
        release: releaseView(result.release),
        ...(devName === '' ? {} : { sessionId: devName }),
        migrationsApplied: result.migrationsApplied,
        warnings: result.warnings,
      }
    },
  }),
  defineTool({
    name: 'list_releases',
    description: 'The app\'s releases, newest first (production, or a development session with sessionId). Needs Edit on the app.',
    input: z.object({ appId, sessionId }).strict(),
    surfaces: BUILDER,
    readOnly: true,
    async run(context, input) {
      const { app } = await editableApp(context, input.appId)
      const releases = await listReleases(context.deps.db, app.id, { devName: devNameOf(input.sessionId) })
      return { releases: releases.map(releaseView) }
    },
  }),
  defineTool({
    name: 'read_logs',
    description: 'Function log lines of the app (production, or a development session with sessionId), newest first, secret values ' +
      'redacted. An app-scoped token reads a development session\'s lines only (production\'s are diagnostics of the full surface). Filters: function, level (that level and above), from and to (ISO 8601 with zone), requestId; limit 1 to 1000 ' +
      '(default 100); cursor is a previous page\'s nextCursor (older lines); after is a previous answer\'s newestCursor (only newer ' +
      'lines, to follow the logs). Needs Edit on the app.',
    input: z.object({
      appId, sessionId,
      function: z.string().min(1).max(64).optional(),
      level: z.enum(['debug', 'info', 'warn', 'error']).optional(),
      from: z.string().max(64).optional(),
      to: z.string().max(64).optional(),
      requestId: z.string().min(1).max(128).optional(),
      limit: z.number().int().min(1).max(1000).optional(),
      cursor: z.string().max(200).optional(),
      after: z.string().max(200).optional().describe('A previous answer\'s newestCursor: only the lines written since'),
    }).strict(),
    surfaces: BUILDER,
    readOnly: true,
    async run(context, input) {
      if (input.sessionId === undefined && surfaceOf(context.principal) !== 'full') {
        throw new ServiceError('TOOL_NOT_AVAILABLE', 'production logs are not on the focused builder surface of an app-scoped token: give sessionId for a development session\'s lines',
          { details: { tool: 'read_logs', field: 'sessionId' } })
      }
      const user = await personOnApp(context, input.appId)
      const { appId: id, sessionId: session, limit, ...rest } = input
      const filters = { ...rest, ...(limit === undefined ? {} : { limit: String(limit) }) }
      return readAppLogs(context.deps.db, { user, appId: id, devName: session, filters })
    },
  }),
  defineTool({
    name: 'set_secret',
    description: 'Set a secret of the app (production, or a development session with sessionId, which must have been deployed). ' +
      'The value goes in and never comes out: the answer says only that it is set. Needs Edit on the app.',
    input: z.object({
      appId, sessionId,
      name: z.string().min(1).max(128).describe('Upper-case letters, digits and underscores, as declared under secrets: in service.yaml'),
      value: z.string().max(65_536),
    }).strict(),
    surfaces: BUILDER,
    readOnly: false,
    async run(context, input) {
      const user = await personOnApp(context, input.appId)
      const { secret, created } = await setAppSecret({ db: context.deps.db, store: context.deps.secrets }, {
        user, appId: input.appId, devName: input.sessionId, name: input.name, value: input.value,
      })
      return { secret, created }
    },
  }),
  defineTool({
    name: 'list_secrets',
    description: 'The app\'s secrets by name (declared by the active release or set): whether each is required and set, and when ' +
      'it was last set. Never a value. Needs Edit on the app.',
    input: z.object({ appId, sessionId }).strict(),
    surfaces: BUILDER,
    readOnly: true,
    async run(context, input) {
      const user = await personOnApp(context, input.appId)
      return { secrets: await listAppSecrets({ db: context.deps.db, store: context.deps.secrets }, { user, appId: input.appId, devName: input.sessionId }) }
    },
  }),
  defineTool({
    name: 'list_cron',
    description: 'The cron entries of the app\'s active production release, with their next run. Needs Edit on the app.',
    input: z.object({ appId }).strict(),
    surfaces: BUILDER,
    readOnly: true,
    async run(context, input) {
      const { app } = await editableApp(context, input.appId)
      return { cron: await listAppCrons(context.deps.db, context.deps.clock, { app }) }
    },
  }),
  defineTool({
    name: 'run_cron',
    description: 'Run one cron entry of the app now (a job with the cron envelope; the schedule does not move). Needs Edit on the app.',
    input: z.object({ appId, name: z.string().min(1).max(64) }).strict(),
    surfaces: BUILDER,
    readOnly: false,
    async run(context, input) {
      const { app } = await editableApp(context, input.appId)
      return { run: await triggerCronRun(context.deps.db, context.deps.clock, { app, name: input.name }) }
    },
  }),
  defineTool({
    name: 'request_app_access_token',
    description: 'Ask the app\'s owner to approve an app access token (svc_app_…) for programmatic runtime access. The owner is ' +
      'emailed the approval link (approveUrl, valid 15 minutes, which you may also show them) and sees the value once in the ' +
      'browser; you never receive the token. Poll POST /v1/app-token-requests/{id}/poll with pollToken for its id once approved.',
    input: z.object({ appId, name: z.string().min(1).max(120).optional() }).strict(),
    surfaces: BUILDER,
    readOnly: false,
    async run(context, input) {
      await personOnApp(context, input.appId)
      return requestAppToken(context.deps, { app: input.appId, name: input.name })
    },
  }),
  defineTool({
    name: 'create_app_access_token',
    description: 'Create an app access token as the app\'s owner (a confirmed account). Answers a one-time reveal link for the ' +
      'owner to open in the browser (valid 15 minutes), never the token itself.',
    input: z.object({ appId, name: z.string().min(1).max(120).optional() }).strict(),
    surfaces: FULL_ONLY,
    readOnly: false,
    async run(context, input) {
      return createOwnerAppToken(context.deps, { user: personOf(context), appId: input.appId, name: input.name })
    },
  }),
]
