// One definition of "a plain object" for the whole SDK: schemas, error details and
// Function definitions all accept only plain objects, from any realm.

/**
 * True for `{ ... }` and `Object.create(null)` objects, including ones made in another
 * realm (an iframe, a worker, a vm context): the prototype is null or an Object.prototype.
 * Arrays, class instances, Dates and Maps are not plain.
 *
 * @example
 * isPlainObject(JSON.parse('{"a":1}')) // true
 * isPlainObject(new Date())            // false
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const prototype: unknown = Object.getPrototypeOf(value)
  return prototype === null || Object.getPrototypeOf(prototype) === null
}
