/**
 * Pieces the integration tests share: deploying an app's files through the owner API, a
 * consumer manifest with integration slots, and the body of the `stubborn` SQL function the statement-timeout tests use to prove a cancel
 * that is caught still ends. Only what several tests repeated word for word lives here;
 * each test keeps its own manifests, since they are what it is about.
 */
import assert from 'node:assert/strict'
import { bundle, type Harness } from './harness.ts'

/**
 * Deploys `files` to the app `slug` as `token`, and fails the test unless it is accepted.
 *
 * @example
 * await deployApp(h, alice.token, 'shop', { 'service.yaml': manifest('shop', PROVIDER, 'private'), 'functions/list.ts': 'export default 1' })
 */
export async function deployApp(h: Harness, token: string, slug: string, files: Record<string, string>): Promise<void> {
  const res = await h.request(`/v1/apps/${slug}/deployments`, { token, json: bundle(files) })
  assert.equal(res.status, 201, await res.text())
}

/** One integration slot of a consumer manifest (spec 2.7); `account` is `app` unless said. */
export interface TestSlot {
  integration: string
  account?: 'app' | 'calling_user'
  capabilities: string[]
}

/**
 * A consumer manifest section: optionally one public Function at `functions/call.ts`, and
 * the custom integration slots named by `slots`, each of cardinality one.
 *
 * @example
 * consumerManifest({ function: 'callCrm', slots: { crm: { integration: 'contacts', capabilities: ['contacts.read'] } } })
 */
export function consumerManifest(options: { function?: string; slots: Record<string, TestSlot> }): string {
  const fn = options.function === undefined ? '' : `functions:
  - name: ${options.function}
    entrypoint: functions/call.ts
    access: public
`
  const slots = Object.entries(options.slots).map(([name, slot]) => `  ${name}:
    provider: custom
    integration: ${slot.integration}
    account: ${slot.account ?? 'app'}
    cardinality: one
    capabilities: [${slot.capabilities.join(', ')}]
`)
  return `${fn}integrations:\n${slots.join('')}`
}

/**
 * The PL/pgSQL body (between `$$`) of a function that catches every cancel where it lands:
 * only an end nothing can catch stops it.
 *
 * @example
 * `create function stubborn() returns void language plpgsql as $$${STUBBORN_BODY}$$;`
 */
export const STUBBORN_BODY = `
begin
  -- The sleeping loop runs inside the handler, so the cancel always lands where it is caught
  -- (a loop that left the block between sleeps could take it outside, and simply fail).
  loop
    begin
      loop
        perform pg_catalog.pg_sleep(0.01);
      end loop;
    exception when query_canceled then
      null;
    end;
  end loop;
end `
