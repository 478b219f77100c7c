// Public surface of notifications/: the change feed (LISTEN + change log), the fan-out and the
// subscriptions/listen method.
export {
  CHANGES_CHANNEL,
  startChangeFeed,
  type ChangeFeed,
  type ChangeFeedOptions,
  type FeedHealth,
} from './change-feed.js';
export {
  Fanout,
  subscriptionKeys,
  type Authorize,
  type FanoutOptions,
  type PublishedChange,
  type Visibility,
} from './fanout.js';
export { createListenMethod, type ListenDependencies } from './listen.js';
export { LegacySubscriptions } from './legacy-subscriptions.js';
