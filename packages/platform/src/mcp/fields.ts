/** Input fields several tools share, and how a tool's bundle becomes a deploy body. */
import { z } from 'zod'

export const appId = z.string().min(1).max(100).describe('The app\'s id or slug')

export const sessionId = z.string().min(1).max(12).optional()
  .describe('A development session (namespace) name such as "alice": 1 to 12 lowercase letters, digits or hyphens. Omit for production.')

/** A bundle as agents hold it: text files as they are, binary ones in base64. */
export const bundleFiles = z.array(z.object({
  path: z.string().min(1).max(500).describe('Path inside the bundle: service.yaml, functions/…, public/…, database/migrations/NNNN_name.sql'),
  content: z.string().describe('The file\'s content: text, or base64 with encoding "base64"'),
  encoding: z.enum(['utf8', 'base64']).optional(),
}).strict()).min(1).max(2000)

/** The owner API's deploy body, `{ files: [{ path, content (base64) }] }`. */
export function bundleBody(files: z.infer<typeof bundleFiles>): { files: Array<{ path: string; content: string }> } {
  return {
    files: files.map((file) => ({
      path: file.path,
      content: file.encoding === 'base64' ? file.content : Buffer.from(file.content, 'utf8').toString('base64'),
    })),
  }
}
