-- Keep the records after a seq from trimming for a while, on whichever instance trims: what a
-- stream cut as too slow had not read. ARGV: holder (unique), afterSeq, forMs, now (the
-- caller's clock, or '' for the server's). The hash `holds` maps holder -> `<afterSeq> <until>`;
-- trim.lua drops what expired.
-- @include prelude
redis.call('HSET', P .. 'holds', ARGV[1], ARGV[2] .. ' ' .. int(nowOf(ARGV[4]) + tonumber(ARGV[3])))
return 1
