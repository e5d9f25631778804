/**
 * Writes to objects keyed by what a client or a model chose (request, tensor and response parameter names):
 * `obj[key] = value` with the key `__proto__` replaces the object's prototype instead of adding a member, so
 * the member is silently lost (and with an object value the prototype is swapped). JSON.parse and protobuf
 * maps hand such keys over as ordinary members; they stay ordinary members here.
 */
export function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}
