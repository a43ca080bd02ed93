-- A part's id is the store's count `pid`: unique and growing. (A shard of the sharded store adds
-- its number, include/part-id-shard.lua, so ids stay unique across shards.)
local PART_SUFFIX = ''
