/**
 * Bindings: the public surface for the composition root and the broker. A binding connects
 * a consumer app's slot to a connection; `standingFrom` is the live delegation check
 * (`bindingStanding` for listings, `callFacts` + `settleStanding` for the broker's one read).
 */
export { activeBinding, appIntegrationSlots, bindAfterConnect, bindSlot, bindingStanding, callFacts, listSlots, publishedContract, settleStanding, slotsOf, standingFrom, unbindSlot } from './bindings.ts'
export type { Binding, BindingStanding, CallFacts, SlotView, StandingFacts } from './bindings.ts'
export { bindingRoutes } from './routes.ts'
export { bindPages, connectAndBindPath } from './pages.ts'
