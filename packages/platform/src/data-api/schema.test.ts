import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createTestDb, backend, type TestDb } from '../../test/test-db.ts'
import { createNamespace, runAsRole, type Namespace } from '../namespaces/namespaces.ts'
import { loadSchema, type Schema } from './schema.ts'

describe(`data API schema introspection (${backend})`, () => {
  let t: TestDb
  let ns: Namespace
  let schema: Schema
  before(async () => {
    t = await createTestDb()
    const [org] = await t.db.query<{ id: string }>(`insert into platform.organisations (name) values ('A') returning id`)
    const [user] = await t.db.query<{ id: string }>(`insert into platform.users (organisation_id, email) values ($1, 'a@a.test') returning id`, [org!.id])
    const [app] = await t.db.query<{ id: string }>(
      `insert into platform.apps (organisation_id, owner_id, slug, name, visibility) values ($1, $2, 'shop', 'shop', 'public') returning id`,
      [org!.id, user!.id])
    ns = await t.db.transaction((tx) => createNamespace(tx, { appId: app!.id, slug: 'shop' }))
    await runAsRole(t.db, { namespace: ns, role: 'owner' }, `
      create table authors (id serial primary key, name text not null, tags text[] default '{}');
      create table books (id bigint generated always as identity primary key, title varchar(200) not null,
        author_id int references authors(id), published date, meta jsonb);
      create table pairs (a int, b int, primary key (a, b));
      create view recent_books as select id, title from books;
      create function books_by(author int) returns setof books language sql stable as $$ select * from books where author_id = author $$;
      create function add(a int, b int default 1) returns int language sql immutable as $$ select a + b $$;
      create function bump() returns void language sql volatile as $$ select $$;
      create table profiles (author_id int primary key references authors(id), handle text unique, bio text);
      create function long_titles(min int default 10) returns table (title varchar, size int) language sql stable
        as $$ select title, length(title) from books where length(title) >= min $$;`)
    schema = await loadSchema(t.db, ns.schemaName)
  })
  after(() => t.cleanup())

  test('tables and views with their columns, types, nullability, defaults and primary keys', () => {
    const books = schema.relations.get('books')!
    assert.equal(books.kind, 'table')
    assert.deepEqual([...books.columns.keys()], ['id', 'title', 'author_id', 'published', 'meta'])
    assert.equal(books.columns.get('title')!.type, 'character varying(200)')
    assert.equal(books.columns.get('title')!.nullable, false)
    assert.equal(books.columns.get('id')!.hasDefault, true)
    assert.deepEqual(books.primaryKey, ['id'])
    assert.deepEqual(schema.relations.get('pairs')!.primaryKey, ['a', 'b'])
    assert.equal(schema.relations.get('authors')!.columns.get('tags')!.elementType, 'text')
    const view = schema.relations.get('recent_books')!
    assert.equal(view.kind, 'view')
    assert.deepEqual(view.primaryKey, [])
  })

  test('foreign keys name both sides', () => {
    assert.deepEqual(schema.foreignKeys.map((fk) => [fk.table, fk.columns, fk.referencedTable, fk.referencedColumns]),
      [['books', ['author_id'], 'authors', ['id']], ['profiles', ['author_id'], 'authors', ['id']]])
  })

  test('functions with arguments, defaults, set-returning and volatility', () => {
    const booksBy = schema.functions.get('books_by')![0]!
    assert.deepEqual(booksBy.arguments, [{ name: 'author', type: 'integer', hasDefault: false, variadic: false }])
    assert.equal(booksBy.returnsSet, true)
    assert.equal(booksBy.returnsRelation, 'books')
    assert.equal(booksBy.returnsScalar, false)
    const add = schema.functions.get('add')![0]!
    assert.deepEqual(add.arguments.map((a) => [a.name, a.hasDefault]), [['a', false], ['b', true]])
    assert.equal(add.returnsScalar, true)
    assert.equal(add.volatility, 'immutable')
    assert.equal(schema.functions.get('bump')![0]!.volatility, 'volatile')
  })

  test('unique keys, result columns of table functions, and void', () => {
    assert.deepEqual(schema.relations.get('profiles')!.uniqueKeys.map((k) => [...k].sort()), [['author_id'], ['handle']])
    assert.deepEqual(schema.relations.get('books')!.uniqueKeys, [['id']])
    const table = schema.functions.get('long_titles')![0]!
    assert.equal(table.returnsScalar, false)
    assert.equal(table.returnsRelation, null)
    assert.deepEqual(table.returnColumns!.map((c) => [c.name, c.type]), [['title', 'character varying'], ['size', 'integer']])
    assert.deepEqual(table.arguments.map((a) => a.name), ['min'])
    assert.equal(schema.functions.get('bump')![0]!.returnsVoid, true)
    assert.equal(schema.functions.get('books_by')![0]!.returnColumns, null)
  })

  test('only the namespace schema is read', async () => {
    assert.equal(schema.relations.has('users'), false)
    const platform = await loadSchema(t.db, ns.schemaName + '_nope')
    assert.equal(platform.relations.size, 0)
  })
})
