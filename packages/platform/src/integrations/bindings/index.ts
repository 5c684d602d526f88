/**
 * Bindings: the public surface for the composition root and the broker. A binding connects
 * a consumer app's slot to a connection; `bindingStanding` is the live delegation check.
 */
export { activeBinding, bindSlot, bindingStanding, listSlots, publishedContract, slotsOf, unbindSlot } from './bindings.ts'
export type { Binding, BindingStanding, SlotView } from './bindings.ts'
export { bindingRoutes } from './routes.ts'
export { bindPages, connectAndBindPath } from './pages.ts'
