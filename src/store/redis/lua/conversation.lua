-- A session's conversation (include/conversation-state.lua): {its activation override (nil when
-- none), its dropped count, then its kept entries oldest first, none once its time is up by
-- `now` and none read with 'override'}, its live revisions' JSON oldest first, and its takeover
-- (`<since> <until>`, nil when none). ARGV: sessionKey, now, 'override' (optional).
-- @include prelude
-- @include conversation-state
return conversationOf(ARGV[1], nowOf(ARGV[2]), ARGV[3] ~= 'override')
