-- wrk script for tools/bench/soak.sh: rotates through a mix of API commands and counts
-- replies whose Code is not OK. KEY and ITEM come from the environment.
local key = os.getenv("KEY")
local item = os.getenv("ITEM")
local queries = {
  "cmd=GetIndexItemInfo&items=1&item0=" .. item,
  "cmd=GetBackLinkData&Count=100&item=" .. item,
  "cmd=GetBackLinkData&Count=100&MaxSourceURLsPerRefDomain=1&item=" .. item,
  "cmd=GetRefDomains&Count=100&item0=" .. item .. "&items=1",
  "cmd=GetAnchorText&Count=50&item=" .. item,
  "cmd=GetIndexItemInfo&items=1&datasource=fresh&item0=" .. item,
  "cmd=GetBackLinkData&Count=100&datasource=fresh&item=" .. item,
  "cmd=GetTopPages&Count=20&Query=" .. item,
}
local threads = {}
-- Globals, not locals: done() reads each thread's through thread:get().
n = 0
errors = 0
last_error = ""

function setup(thread)
  table.insert(threads, thread)
end

function request()
  n = n + 1
  return wrk.format("GET", "/api/json?app_api_key=" .. key .. "&" .. queries[(n % #queries) + 1])
end

function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"Code":"OK"', 1, true) then
    errors = errors + 1
    last_error = string.sub(body, 1, 120)
  end
end

function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do
    total = total + t:get("errors")
    local e = t:get("last_error")
    if e ~= "" then print("last error: " .. e) end
  end
  print(string.format("requests %d, API errors %d, p50 %.1f ms, p99 %.1f ms",
    summary.requests, total, latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
