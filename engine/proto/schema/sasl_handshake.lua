-- SaslHandshake (17): the mechanism a client means to authenticate with on
-- a SASL listener; the answer lists the enabled ones. v1 carries the SASL
-- tokens in SaslAuthenticate requests after it (KIP-152).

return {
  key = 17, name = "SaslHandshake",
  versions = "0-1",
  request = {
    { "mechanism", "string" },
  },
  response = {
    { "error_code", "int16" },
    { "mechanisms", "[]string" },
  },
}
