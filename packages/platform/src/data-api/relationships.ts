/**
 * Resource embedding: which foreign key joins a relation to the one a request embeds, as
 * PostgREST resolves it. The embed names a table (`users`), or a foreign-key column of the
 * parent (`author_id`, many-to-one), optionally with a hint naming the constraint or the
 * column (`users!author_id`). No match is PGRST200; several are PGRST201 (300).
 */
import { PostgrestError } from './errors.ts'
import type { ForeignKey, Relation, Schema } from './schema.ts'

export interface Relationship {
  target: Relation
  /** many-to-one: the parent holds the key; one-to-many: the target holds it. */
  cardinality: 'many-to-one' | 'one-to-many'
  /** Pairs of (parent column, target column) to join on. */
  join: readonly (readonly [string, string])[]
  constraint: string
}

function toOne(fk: ForeignKey, target: Relation): Relationship {
  return { target, cardinality: 'many-to-one', join: fk.columns.map((c, i) => [c, fk.referencedColumns[i]!] as const), constraint: fk.name }
}

function toMany(fk: ForeignKey, target: Relation): Relationship {
  return { target, cardinality: 'one-to-many', join: fk.referencedColumns.map((c, i) => [c, fk.columns[i]!] as const), constraint: fk.name }
}

export function resolveRelationship(schema: Schema, parent: Relation, name: string, hint: string | undefined): Relationship {
  const candidates: Relationship[] = []
  for (const fk of schema.foreignKeys) {
    // parent -> target (many-to-one), named by the target table or the parent's FK column
    if (fk.table === parent.name) {
      const target = schema.relations.get(fk.referencedTable)
      const byColumn = fk.columns.length === 1 && fk.columns[0] === name
      if (target && (fk.referencedTable === name || byColumn)) candidates.push(toOne(fk, target))
    }
    // target -> parent (one-to-many), named by the target table
    if (fk.referencedTable === parent.name && fk.table === name) {
      const target = schema.relations.get(fk.table)
      if (target) candidates.push(toMany(fk, target))
    }
  }
  const matching = hint === undefined
    ? candidates
    : candidates.filter((r) => r.constraint === hint || r.join.some(([a, b]) => a === hint || b === hint) || r.target.name === hint)
  if (matching.length === 1) return matching[0]!
  if (matching.length === 0) {
    throw new PostgrestError('PGRST200', 400,
      `Could not find a relationship between '${parent.name}' and '${name}' in the schema cache`, {
        hint: 'Verify that the tables are related by a foreign key and that the names in the request are spelled exactly',
      })
  }
  throw new PostgrestError('PGRST201', 300, `Could not embed because more than one relationship was found for '${parent.name}' and '${name}'`, {
    details: matching.map((r) => `${r.cardinality} via ${r.constraint}`).join('; '),
    hint: `Try changing '${name}' to one of: ${matching.map((r) => `'${name}!${r.constraint}'`).join(', ')}`,
  })
}
