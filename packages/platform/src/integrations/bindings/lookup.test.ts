/**
 * A slot's live binding is found through the unique index `integration_bindings_live_slot`
 * (migration 0021) for both kinds of slot, in the generic plan PL/pgSQL and prepared
 * statements use: before it, `user_id is not distinct from $3` could use no index and every
 * broker call scanned the bindings table. The planner is told not to scan sequentially, so
 * an empty table shows which index the predicate CAN use; a predicate no index serves would
 * still plan a sequential scan.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Queryable } from '../../db/db.ts'
import { backend, createTestDb, type TestDb } from '../../../test/test-db.ts'
import { LIVE_SLOT_BINDING } from './queries.ts'

const APP = '7b0e2c1e-2f4a-4c3e-9d1a-0a6b5c4d3e2f'
const PERSON = '5d1c9a8b-7e6f-4a3b-8c2d-1e0f9a8b7c6d'

async function genericPlan(tx: Queryable, person: string | null): Promise<string> {
  await tx.query('set local enable_seqscan = off')
  await tx.query('set local plan_cache_mode = force_generic_plan')
  await tx.query(`prepare live_binding (uuid, text, uuid) as select id from platform.integration_bindings where ${LIVE_SLOT_BINDING}`)
  const rows = await tx.query<{ 'QUERY PLAN': string }>(`explain execute live_binding ('${APP}', 'shop', ${person === null ? 'null' : `'${person}'`})`)
  await tx.query('deallocate live_binding')
  return rows.map((row) => row['QUERY PLAN']).join('\n')
}

describe(`the live binding of a slot is found through one index (${backend})`, () => {
  let t: TestDb
  before(async () => { t = await createTestDb() })
  after(() => t?.cleanup())

  for (const [kind, person] of [['the app\'s binding (no person)', null], ['a person\'s binding (calling_user)', PERSON]] as const) {
    test(`${kind} is looked up through integration_bindings_live_slot in a generic plan`, async () => {
      const plan = await t.db.transaction((tx) => genericPlan(tx, person))
      assert.match(plan, /Index (Only )?Scan using integration_bindings_live_slot/, plan)
      assert.doesNotMatch(plan, /Seq Scan/, plan)
    })
  }

  test('the index is unique: one live binding per slot and person, the app counting as one person', async () => {
    const [index] = await t.db.query<{ unique: boolean; predicate: string }>(
      `select i.indisunique as unique, pg_get_expr(i.indpred, i.indrelid) as predicate
         from pg_index i join pg_class c on c.oid = i.indexrelid
        where c.relname = 'integration_bindings_live_slot'`)
    assert.deepEqual(index, { unique: true, predicate: "(status = 'active'::text)" })
  })

  test('the broker\'s one statement joins the binding with the same indexed expression', async () => {
    const [row] = await t.db.query<{ body: string }>(
      `select pg_get_functiondef('platform.integration_call_facts(uuid, text, text, uuid)'::regprocedure) as body`)
    assert.match(row!.body, /coalesce\(b\.user_id, '00000000-0000-0000-0000-000000000000'::uuid\) = coalesce\(p_user, '00000000-0000-0000-0000-000000000000'::uuid\)/)
    assert.doesNotMatch(row!.body, /is not distinct from/)
  })
})
