/**
 * Whether a GIF or WEBP image is animated, read from its bytes by libvips through `sharp`
 * (its prebuilt binaries ship inside the npm packages). `file-type` tells the format, and
 * APNG from PNG, but not how many frames a GIF or WEBP holds; `sharp().metadata()` reads
 * the container's frame count (`pages`) without decoding pixels. An image is animated when
 * it has more than one frame (a one-frame "animation" is a still image to the provider).
 * `sharp` is loaded on first use, so a platform on a machine without its binary starts and
 * only GIF and WEBP attachments fail (as the platform's own error, not the image's).
 */
import type { Sharp, SharpOptions } from 'sharp'

type SharpFactory = (input: Uint8Array, options?: SharpOptions) => Sharp

let loaded: Promise<SharpFactory> | undefined

function sharp(): Promise<SharpFactory> {
  loaded ??= import('sharp').then((module) => module.default as SharpFactory)
  return loaded
}

/** Bytes libvips cannot read as the image they claim to be. */
export class UnreadableImageError extends Error {
  override readonly name = 'UnreadableImageError'
}

/**
 * How many frames a GIF or WEBP has (1 for a still image); UnreadableImageError when
 * libvips cannot read the image's header.
 *
 * @example
 * await frameCount(gifBytes) // 3 for a GIF of three frames
 */
export async function frameCount(bytes: Uint8Array): Promise<number> {
  const create = await sharp()
  // Metadata only: libvips reads the header and frame table, never the pixels, so the pixel
  // limit (a guard for decoding) does not apply; the bytes were size-checked before.
  try {
    const metadata = await create(bytes, { failOn: 'none', limitInputPixels: false }).metadata()
    return metadata.pages ?? 1
  } catch (error) {
    throw new UnreadableImageError('libvips cannot read the image', { cause: error })
  }
}
