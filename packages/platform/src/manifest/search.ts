// The `data` section and its named searches (`data.search`, SDK 2.4 candidate): which
// table a search reads, which columns it returns and may filter on, and how it matches
// (PostgreSQL full-text search, a vector column, or both for hybrid search).

import { SQL_IDENTIFIER, LOWER_SNAKE_NAME } from './names.ts'
import {
  arrayField,
  choiceField,
  integerField,
  mappingField,
  member,
  readMapping,
  readString,
  stringField,
  stringListField,
  type Fields,
  type Item,
} from './read-fields.ts'
import { reportDuplicateNames, requireSdk, type SectionContext } from './section-context.ts'
import type { SearchDeclaration, TextSearchLanguage } from './types.ts'

/** PostgreSQL's built-in text search configurations. */
export const TEXT_SEARCH_LANGUAGES = [
  'simple', 'arabic', 'armenian', 'basque', 'catalan', 'danish', 'dutch', 'english',
  'finnish', 'french', 'german', 'greek', 'hindi', 'hungarian', 'indonesian', 'irish',
  'italian', 'lithuanian', 'nepali', 'norwegian', 'portuguese', 'romanian', 'russian',
  'serbian', 'spanish', 'swedish', 'tamil', 'turkish', 'yiddish',
] as const satisfies readonly TextSearchLanguage[]

export function readData(context: SectionContext, root: Fields): { search: SearchDeclaration[] } | undefined {
  const data = mappingField(context.problems, root, 'data', { required: false, mapping: 'data' })
  if (data === undefined) return { search: [] }
  const items = arrayField(context.problems, data, 'search', { required: false })
  if (items === undefined) return { search: [] }
  if (items.length > 0) {
    const at = member(context.problems, data, 'search', false)
    if (at !== undefined) requireSdk(context, at, { gate: 'dataSearch', feature: 'data searches (data.search)' })
  }
  const searches: SearchDeclaration[] = []
  const names: { name: string; item: Item }[] = []
  let valid = true
  for (const item of items) {
    const search = readSearch(context, item, names)
    if (search === undefined) valid = false
    else searches.push(search)
  }
  reportDuplicateNames(context.problems, names, 'search')
  return valid ? { search: searches } : undefined
}

function readSearch(context: SectionContext, item: Item, names: { name: string; item: Item }[]): SearchDeclaration | undefined {
  const { problems } = context
  const fields = readMapping(problems, item, 'data.search[]')
  if (fields === undefined) return undefined
  const nameItem = member(problems, fields, 'name', true)
  const name = nameItem === undefined ? undefined : readString(problems, nameItem, LOWER_SNAKE_NAME)
  if (name !== undefined && nameItem !== undefined) names.push({ name, item: nameItem })
  const table = stringField(problems, fields, 'table', { required: true, ...SQL_IDENTIFIER })
  const select = readSelect(context, fields)
  const filters = stringListField(problems, fields, 'filters', { required: false, ...SQL_IDENTIFIER })
  const fullText = readFullText(context, fields)
  const vector = readVector(context, fields)
  if (fullText === undefined && vector === undefined) {
    problems.report(
      'MANIFEST_SEARCH_MODE_MISSING',
      fields.node,
      fields.path,
      'a search needs fullText, vector or both; declare how it matches',
    )
    return undefined
  }
  if (name === undefined || table === undefined || select === undefined || fullText === 'invalid' || vector === 'invalid') {
    return undefined
  }
  return {
    name,
    table,
    select,
    filters: filters ?? [],
    ...(fullText === undefined ? {} : { fullText }),
    ...(vector === undefined ? {} : { vector }),
  }
}

function readSelect(context: SectionContext, fields: Fields): string[] | undefined {
  const select = stringListField(context.problems, fields, 'select', {
    required: true,
    minItems: 1,
    maxItems: 50,
    ...SQL_IDENTIFIER,
  })
  if (select === undefined) return undefined
  if (!select.includes('id')) {
    const at = member(context.problems, fields, 'select', true)
    if (at !== undefined) {
      context.problems.report('MANIFEST_SEARCH_ID_NOT_SELECTED', at.node, at.path, 'select must include "id"; search hits are identified and ordered by id')
    }
    return undefined
  }
  return select
}

function readFullText(
  context: SectionContext,
  fields: Fields,
): { language: TextSearchLanguage; columns: string[] } | undefined | 'invalid' {
  const { problems } = context
  const item = member(problems, fields, 'fullText', false)
  if (item === undefined) return undefined
  const fullText = readMapping(problems, item, 'data.search[].fullText')
  if (fullText === undefined) return 'invalid'
  const language = choiceField(problems, fullText, 'language', { required: true, choices: TEXT_SEARCH_LANGUAGES })
  const columns = stringListField(problems, fullText, 'columns', { required: true, minItems: 1, maxItems: 16, ...SQL_IDENTIFIER })
  if (language === undefined || columns === undefined) return 'invalid'
  return { language, columns }
}

function readVector(
  context: SectionContext,
  fields: Fields,
): { column: string; dimensions: number; model: string } | undefined | 'invalid' {
  const { problems } = context
  const item = member(problems, fields, 'vector', false)
  if (item === undefined) return undefined
  const vector = readMapping(problems, item, 'data.search[].vector')
  if (vector === undefined) return 'invalid'
  const column = stringField(problems, vector, 'column', { required: true, ...SQL_IDENTIFIER })
  const dimensions = integerField(problems, vector, 'dimensions', { required: true, min: 1, max: 16_000 })
  const model = stringField(problems, vector, 'model', { required: true, maxLength: 200 })
  if (column === undefined || dimensions === undefined || model === undefined) return 'invalid'
  return { column, dimensions, model }
}
