/**
 * Inline image bytes staged for a `ctx.ai` call (spec 4.3 `{ type: 'image', data,
 * contentType }`, spec 8 "AI attachments": 15 MiB each, 20 MiB together). A context call
 * carries at most 1 MiB of JSON, so the worker (functions/worker/worker.ts) sends an inline
 * image too large to ride in its AI call in pieces first, as `ctx.files` uploads do, and the
 * call refers to the staged bytes:
 *
 *   attachment.begin({ index, size, contentType, count, inlineBytes }) -> { id }
 *   attachment.chunk(id, bytes)              in order, until `size` bytes arrived
 *   generateText({ ..., attachments: [..., { type: 'image', staged: id, contentType }] })
 *   attachment.release(id, ...)              the worker's call failed before it was answered
 *
 * The call's attachments are then checked by attachments.ts exactly as bytes sent inline
 * are. Staged bytes belong to their invocation, which holds at most four images and 20 MiB
 * of them at once: `begin` is refused with the spec's codes (attachments.ts
 * `checkStagedImage`) before a byte is stored. They are given back when the AI call that
 * refers to them ends, and all of an invocation's when it ends, by failure or timeout too.
 * The process holds at most `maxTotalBytes` of them over all invocations (default
 * STAGING_MAX_TOTAL_BYTES): beyond, `begin` is refused AI_ATTACHMENTS_BUSY (503, retryable),
 * so many invocations at once cannot fill the platform's memory with attachments.
 */
import { randomUUID } from 'node:crypto'
import { ServiceError } from '../lib/errors.ts'
import { checkStagedImage } from './attachments.ts'

/** The invocation a staging call belongs to, as the Functions host gives it (ai.ts AiContextCall). */
export interface StagingCall {
  /** The invocation's own record: its staged bytes are its own. */
  readonly invocation: object
  /** Aborts when the invocation ends; its staged bytes are given back then. */
  readonly signal: AbortSignal
}

export interface AttachmentStaging {
  /** Reserves room for one image's bytes after checking it; answers the id the call refers to. */
  begin(call: StagingCall, declared: unknown): { id: string }
  /** Adds the next piece of a staged image. */
  chunk(call: StagingCall, id: unknown, piece: unknown): null
  /**
   * `attachments` with each `{ type: 'image', staged: id, contentType }` replaced by
   * `{ type: 'image', data, contentType }`; the ids used are pushed to `used`, for `release`.
   */
  resolve(call: StagingCall, attachments: unknown, used: string[]): unknown
  /** Gives back the invocation's staged images of these ids (unknown ids are ignored). */
  release(invocation: object, ids: readonly unknown[]): void
  /** Bytes staged and not given back, over all invocations. */
  bytes(): number
}

/** Staged bytes one process holds at once, over all invocations (a dozen calls at the 20 MiB limit). */
export const STAGING_MAX_TOTAL_BYTES = 256 * 1024 * 1024

interface Staged {
  readonly data: Uint8Array
  received: number
}

interface Held {
  readonly images: Map<string, Staged>
  bytes: number
}

/**
 * @example
 * const staging = createAttachmentStaging()
 * const { id } = staging.begin(call, { index: 0, size: data.byteLength, contentType: 'image/png', count: 1, inlineBytes: data.byteLength })
 * staging.chunk(call, id, data)
 */
export function createAttachmentStaging(options: { maxTotalBytes?: number } = {}): AttachmentStaging {
  const maxTotalBytes = options.maxTotalBytes ?? STAGING_MAX_TOTAL_BYTES
  const invocations = new Map<object, Held>()
  let total = 0

  function heldBy(call: StagingCall): Held {
    if (call.signal.aborted) throw new ServiceError('AI_ATTACHMENT_INVALID', 'The invocation has ended; nothing more is staged for it')
    let held = invocations.get(call.invocation)
    if (held === undefined) {
      const created: Held = { images: new Map(), bytes: 0 }
      invocations.set(call.invocation, created)
      call.signal.addEventListener('abort', () => {
        total -= created.bytes
        created.images.clear()
        created.bytes = 0
        invocations.delete(call.invocation)
      }, { once: true })
      held = created
    }
    return held
  }

  function release(held: Held, id: string): void {
    const image = held.images.get(id)
    if (image === undefined) return
    held.images.delete(id)
    held.bytes -= image.data.byteLength
    total -= image.data.byteLength
  }

  return {
    begin(call, declared) {
      const held = heldBy(call)
      const image = checkStagedImage(declared, { count: held.images.size, bytes: held.bytes })
      if (total + image.size > maxTotalBytes) {
        throw new ServiceError('AI_ATTACHMENTS_BUSY', 'The platform holds as many staged attachment bytes as it may just now; try again shortly')
      }
      const id = randomUUID()
      held.images.set(id, { data: new Uint8Array(image.size), received: 0 })
      held.bytes += image.size
      total += image.size
      return { id }
    },

    chunk(call, id, piece) {
      const image = typeof id === 'string' ? heldBy(call).images.get(id) : undefined
      if (image === undefined) throw notHeld()
      if (!(piece instanceof Uint8Array)) throw new ServiceError('AI_ATTACHMENT_INVALID', 'A staged image piece must be bytes')
      if (image.received + piece.byteLength > image.data.byteLength) {
        throw new ServiceError('AI_ATTACHMENT_INVALID', `The staged image takes ${image.data.byteLength} bytes; more were sent`, {
          details: { size: image.data.byteLength },
        })
      }
      image.data.set(piece, image.received)
      image.received += piece.byteLength
      return null
    },

    resolve(call, attachments, used) {
      if (!Array.isArray(attachments)) return attachments
      const held = invocations.get(call.invocation)
      return attachments.map((attachment: unknown, index) => {
        if (typeof attachment !== 'object' || attachment === null || !Object.hasOwn(attachment, 'staged')) return attachment
        const record = attachment as Record<string, unknown>
        for (const key of Object.keys(record)) {
          if (!['type', 'staged', 'contentType'].includes(key)) {
            throw new ServiceError('AI_ATTACHMENT_INVALID', `attachment ${index} has an unknown field "${key.slice(0, 64)}"`, { details: { index } })
          }
        }
        const id = record.staged
        const image = typeof id === 'string' ? held?.images.get(id) : undefined
        if (record.type !== 'image' || typeof id !== 'string' || image === undefined) throw notHeld(index)
        used.push(id)
        if (image.received !== image.data.byteLength) {
          throw new ServiceError('AI_ATTACHMENT_INVALID', `Attachment ${index} is staged incompletely: ${image.received} of ${image.data.byteLength} bytes arrived`, {
            details: { index },
          })
        }
        return { type: 'image', data: image.data, contentType: record.contentType }
      })
    },

    release(invocation, ids) {
      const held = invocations.get(invocation)
      if (held === undefined) return
      for (const id of ids) if (typeof id === 'string') release(held, id)
    },

    bytes: () => total,
  }
}

function notHeld(index?: number): ServiceError {
  const which = index === undefined ? 'A staged image' : `Attachment ${index}`
  return new ServiceError('AI_ATTACHMENT_INVALID', `${which} refers to staged bytes this invocation does not hold`, index === undefined ? {} : { details: { index } })
}
