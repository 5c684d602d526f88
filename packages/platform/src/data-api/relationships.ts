/**
 * Resource embedding: which foreign key joins a relation to the one a request embeds, as
 * PostgREST resolves it. The embed names a table (`users`), or a foreign-key column of the
 * parent (`author_id`, many-to-one), optionally with a hint naming the constraint or the
 * column (`users!author_id`). No match is PGRST200; several are PGRST201 (300). A foreign
 * key whose columns are also a unique key of the table holding it is one-to-one, embedded
 * as an object from both sides, as PostgREST 11+ does.
 */
import { PostgrestError } from './errors.ts'
import type { ForeignKey, Relation, Schema } from './schema.ts'

export type Cardinality = 'many-to-one' | 'one-to-many' | 'one-to-one'

export interface Relationship {
  target: Relation
  /** many-to-one and one-to-one embed an object (or null); one-to-many an array. */
  cardinality: Cardinality
  /** Pairs of (parent column, target column) to join on. */
  join: readonly (readonly [string, string])[]
  constraint: string
}

/** True when the embed is a single object (or null) rather than an array. */
export function isToOne(relationship: Relationship): boolean {
  return relationship.cardinality !== 'one-to-many'
}

function sameColumns(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((c) => b.includes(c))
}

function toOne(fk: ForeignKey, target: Relation): Relationship {
  return { target, cardinality: 'many-to-one', join: fk.columns.map((c, i) => [c, fk.referencedColumns[i]!] as const), constraint: fk.name }
}

function toMany(fk: ForeignKey, target: Relation): Relationship {
  const unique = target.uniqueKeys.some((key) => sameColumns(key, fk.columns))
  return {
    target,
    cardinality: unique ? 'one-to-one' : 'one-to-many',
    join: fk.referencedColumns.map((c, i) => [c, fk.columns[i]!] as const),
    constraint: fk.name,
  }
}

function describe(parent: Relation, r: Relationship): Record<string, string> {
  const [from, to] = r.cardinality === 'many-to-one' ? [parent.name, r.target.name] : [r.target.name, parent.name]
  const fromColumns = r.cardinality === 'many-to-one' ? r.join.map(([p]) => p) : r.join.map(([, t]) => t)
  const toColumns = r.cardinality === 'many-to-one' ? r.join.map(([, t]) => t) : r.join.map(([p]) => p)
  return {
    cardinality: r.cardinality,
    embedding: `${parent.name} with ${r.target.name}`,
    relationship: `${r.constraint} using ${from}(${fromColumns.join(', ')}) and ${to}(${toColumns.join(', ')})`,
  }
}

/** The relationship `name` (with `hint`) designates from `parent`, or PGRST200/PGRST201. */
export function resolveRelationship(schema: Schema, parent: Relation, name: string, hint: string | undefined): Relationship {
  const candidates: Relationship[] = []
  for (const fk of schema.foreignKeys) {
    // parent -> target (many-to-one), named by the target table or the parent's FK column
    if (fk.table === parent.name) {
      const target = schema.relations.get(fk.referencedTable)
      const byColumn = fk.columns.length === 1 && fk.columns[0] === name
      if (target && (fk.referencedTable === name || byColumn)) candidates.push(toOne(fk, target))
    }
    // target -> parent (one-to-many or one-to-one), named by the target table
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
        details: `Searched for a foreign key relationship between '${parent.name}' and '${name}'` +
          `${hint === undefined ? '' : ` using the hint '${hint}'`} in the schema '${schema.name}', but no matches were found.`,
      })
  }
  throw new PostgrestError('PGRST201', 300, `Could not embed because more than one relationship was found for '${parent.name}' and '${name}'`, {
    details: matching.map((r) => describe(parent, r)),
    hint: `Try changing '${name}' to one of the following: ${matching.map((r) => `'${name}!${r.constraint}'`).join(', ')}. ` +
      `Find the desired relationship in the 'details' key.`,
  })
}
