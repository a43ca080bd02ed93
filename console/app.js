// The operator console: plain DOM, no framework, no build step. Every string that came from a
// webhook is put into the page as text (textContent / text nodes), never as HTML.
//
// This entry wires the panels: the Deliveries and Outputs lists (lists.js) fed by the two
// event streams (sse.js), the Channels counters (stats.js), Dead letters (deadletters.js), the
// search and trace (trace.js) and Connections (connections.js); api.js holds the token.

import { apiJson } from './api.js';
import { startConnections } from './connections.js';
import { createDeadLetters } from './deadletters.js';
import { $ } from './dom.js';
import { createLists } from './lists.js';
import { follow } from './sse.js';
import { startStats } from './stats.js';
import { createSearch } from './trace.js';

const STATS_EVERY_MS = 3000;

// A click on an id traces it. `search` is created below, once the lists it filters exist; ids
// can only be clicked after that.
const trace = (query) => search(query);
const deadLetters = createDeadLetters({ trace });
const lists = createLists({ trace, refreshDeadLetters: deadLetters.refresh });
const search = createSearch({ sessionSeen: lists.sessionSeen, setSessionFilter: lists.setSessionFilter });

lists.changed();
follow('v1/activity', $('live-activity'), lists.onActivity);
follow('v1/events', $('live-events'), lists.onOutput);
startStats({ everyMs: STATS_EVERY_MS, refreshDeadLetters: deadLetters.refresh });
startConnections({ apiJson, everyMs: STATS_EVERY_MS });
