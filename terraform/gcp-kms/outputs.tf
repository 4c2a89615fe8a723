output "kek_uri" {
  description = "The KEK URI for `stateseal init --kek`."
  value       = "gcp-kms://${google_kms_crypto_key.kek.id}"
}
