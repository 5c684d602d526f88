// Types of find-chromium.mjs (plain JavaScript so the test runner and CI run it without tsx).

type Env = Record<string, string | undefined>

export declare const CHROMIUM_NAMES: readonly string[]
export declare const CHROMIUM_INSTALL_HINT: string
export declare function findChromium(options: { env: Env }): { path: string } | { path: null; reason: string }
export declare function browserRequired(options: { env: Env }): boolean
