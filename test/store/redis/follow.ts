export { follow, type Followed } from '../../support/sse.js';
