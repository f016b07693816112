/** The event-store contract (event-store.contract.ts) on every available store kind. */
import { storeKinds } from '../helpers/store-kinds.js';
import { eventStoreContract } from './event-store.contract.js';

for (const kind of storeKinds()) eventStoreContract(kind);
