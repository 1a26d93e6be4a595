// The only code of ours in the bundle: expose the library's RFC 9474 suites as `blindrsa`.
export { RSABSSA, BlindRSA } from "@cloudflare/blindrsa-ts";
