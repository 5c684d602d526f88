// Adds a note for the signed-in person and returns it with how many notes they have.
// Runs as the caller: row-level security (database/migrations/0001_notes.sql) stamps and
// checks owner_id, so one person never sees another's notes.
import { defineFunction, errors, object, string } from '@service/server'

export default defineFunction({
  input: object({ text: string() }),
  async handler({ input, user, data, log }) {
    if (!user) throw errors.unauthorized('SIGN_IN_REQUIRED', 'Sign in to add notes')
    const text = input.text.trim()
    if (text.length === 0 || text.length > 500) {
      throw errors.badRequest('TEXT_INVALID', 'A note has 1 to 500 characters')
    }
    const note = await data.table('notes').create({ text })
    const notes = await data.table('notes').list({ select: ['id'], limit: 1000 })
    log.info('note added', { id: note.id })
    return { note, count: notes.length }
  },
})
