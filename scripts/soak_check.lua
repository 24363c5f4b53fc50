-- Checks a soak history (scripts/soak.sh) with kafkaiq.check and prints
-- the report; exits 1 on any anomaly.
--   build/kafkaiq run scripts/soak_check.lua HISTORY
local check = require "kafkaiq.check"
local path = assert(arg[1], "usage: soak_check.lua HISTORY")
local h, err = check.load(path)
if not h then
  io.stderr:write("soak_check: ", err, "\n")
  os.exit(2)
end
local report = h:check()
print(check.summary(report))
os.exit(report.ok and report.counts.unseen == 0 and 0 or 1)
