output "kek_uri" {
  description = "The KEK URI for `stateseal init --kek`."
  value       = "gcp-kms://${google_kms_crypto_key.kek.id}"
}

output "store_uri" {
  description = "The keyset store URI for `stateseal init --store` and the servers' `store`."
  value       = "gs://${google_storage_bucket.keyset.name}/${var.keyset_object}"
}
