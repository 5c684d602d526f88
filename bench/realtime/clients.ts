/**
 * The subscribers of `npm run bench:realtime`, in a process of their own (so their event
 * loop is not the platform's), driven over IPC: opens N WebSockets to a server, joins a
 * channel on the platform's, and records for every frame that carries a `sent_at` (absolute
 * ms, as `performance.timeOrigin + performance.now()` reads it; the parent corrects for the
 * two processes' clock offset, which it measures with `clock`) its latency, and the time the
 * last expected frame arrived.
 */
import WebSocket from 'ws'

const parentPort = { postMessage: (message: unknown) => process.send!(message), on: (event: 'message', listener: (message: any) => void) => process.on(event, listener) }

type Command =
  | { type: 'open'; port: number; host: string; n: number; join: unknown | null }
  | { type: 'expect'; count: number }
  | { type: 'collect' }
  | { type: 'close' }
  | { type: 'clock' }

const now = () => performance.timeOrigin + performance.now()
let sockets: WebSocket[] = []
let latencies: number[] = []
let expected = Number.POSITIVE_INFINITY
let lastAt = 0

function sentAt(frame: any): number | undefined {
  if (frame.type === 'change') return frame.record?.sent_at
  if (frame.type === 'broadcast') return frame.payload?.sent_at
  return undefined
}

function onFrame(data: WebSocket.RawData): void {
  const at = now()
  const frame = JSON.parse(String(data))
  const sent = sentAt(frame)
  if (sent === undefined) return
  latencies.push(at - sent)
  lastAt = at
  if (latencies.length === expected) {
    expected = Number.POSITIVE_INFINITY
    parentPort.postMessage({ type: 'done', lastAt })
  }
}

async function open(command: Extract<Command, { type: 'open' }>): Promise<void> {
  const openOne = () => new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${command.port}/_service/realtime`, { headers: { host: command.host }, perMessageDeflate: false })
    ws.once('error', reject)
    ws.once('open', () => {
      if (command.join === null) return resolve(ws)
      ws.once('message', (data) => {
        const answer = JSON.parse(String(data))
        if (answer.type !== 'joined') return reject(new Error(`join refused: ${String(data)}`))
        ws.on('message', onFrame)
        resolve(ws)
      })
      ws.send(JSON.stringify(command.join))
    })
    if (command.join === null) ws.on('message', onFrame)
  })
  // 50 handshakes at a time.
  for (let at = 0; at < command.n; at += 50) {
    sockets.push(...await Promise.all(Array.from({ length: Math.min(50, command.n - at) }, openOne)))
  }
}

parentPort.on('message', (command: Command) => {
  void (async () => {
    switch (command.type) {
      case 'open':
        await open(command)
        parentPort.postMessage({ type: 'opened', sockets: sockets.length })
        return
      case 'expect':
        latencies = []
        lastAt = 0
        expected = command.count
        parentPort.postMessage({ type: 'expecting' })
        return
      case 'collect':
        parentPort.postMessage({ type: 'collected', latencies, lastAt })
        return
      case 'clock':
        parentPort.postMessage({ type: 'clock', at: now() })
        return
      case 'close':
        for (const ws of sockets) ws.terminate()
        sockets = []
        parentPort.postMessage({ type: 'closed' })
        return
    }
  })().catch((error: unknown) => parentPort.postMessage({ type: 'failed', error: String(error) }))
})
