-- Browser-like traffic for wrk: every request a random one of PAGES pages, with its own
-- User-Agent, Accept-Language and Referer (no cookies), as browsers and bots behind CDNs
-- send them. PAGES comes from the environment (bench/hit_path/run.py sets it).
local pages = tonumber(os.getenv("PAGES") or "2000")
local languages = {
  "en-US,en;q=0.9", "en-GB,en;q=0.8", "de-DE,de;q=0.9,en;q=0.8", "fr-FR,fr;q=0.9,en;q=0.7",
  "es-ES,es;q=0.9", "pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7", "ja,en-US;q=0.9,en;q=0.8",
  "nl-NL,nl;q=0.9,en-US;q=0.8", "it-IT,it;q=0.9", "pl-PL,pl;q=0.9,en-US;q=0.8,en;q=0.7",
}
local platforms = {
  "Windows NT 10.0; Win64; x64", "Macintosh; Intel Mac OS X 10_15_7", "X11; Linux x86_64",
  "Linux; Android 14; Pixel 8", "iPhone; CPU iPhone OS 17_4 like Mac OS X",
}
local accept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"

function init(args)
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 100000)
end

function request()
  local headers = {
    ["User-Agent"] = string.format(
      "Mozilla/5.0 (%s) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%d.0.%d.%d Safari/537.36",
      platforms[math.random(#platforms)], math.random(110, 131), math.random(4000, 6999),
      math.random(10, 250)),
    ["Accept"] = accept,
    ["Accept-Language"] = languages[math.random(#languages)],
    ["Referer"] = string.format("http://www.example.test/p/%d", math.random(pages)),
  }
  return wrk.format("GET", string.format("/p/%d", math.random(pages)), headers)
end
