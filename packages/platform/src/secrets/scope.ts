/** Which namespace a secret belongs to (shared by the store and its queries). */

/** One app namespace: `devName` '' is production. */
export interface SecretScope {
  readonly appId: string
  readonly devName: string
}
