// Adds a note for the signed-in person and returns it with how many notes they have.
// `access: user` (service.yaml): the platform runs it only for a signed-in caller. It runs as
// the caller: row-level security (database/migrations/0001_notes.sql) stamps and checks
// owner_id, so one person never sees another's notes.
import { defineFunction, errors, object, string } from '@service/server'

export default defineFunction({
  input: object({ text: string() }),
  async handler({ input, data, log }) {
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
