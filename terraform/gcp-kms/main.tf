# A key ring and an ENCRYPT_DECRYPT crypto key that rotates, cannot be
# destroyed by terraform, and only the servers' service account may use.

resource "google_kms_key_ring" "stateseal" {
  project  = var.project
  name     = var.key_ring
  location = var.location
}

resource "google_kms_crypto_key" "kek" {
  name            = var.key_name
  key_ring        = google_kms_key_ring.stateseal.id
  purpose         = "ENCRYPT_DECRYPT"
  rotation_period = var.rotation_period

  version_template {
    algorithm        = "GOOGLE_SYMMETRIC_ENCRYPTION"
    protection_level = var.protection_level
  }

  lifecycle {
    prevent_destroy = true
  }
}

# On this key only (member bindings: they add a member without taking the
# role from anyone else). Read-only servers only decrypt (unwrap); servers
# that write the keyset, and the rotator, also encrypt (wrap new keys).
resource "google_kms_crypto_key_iam_member" "servers" {
  crypto_key_id = google_kms_crypto_key.kek.id
  role          = "roles/cloudkms.cryptoKeyDecrypter"
  member        = "serviceAccount:${var.server_service_account}"
}

resource "google_kms_crypto_key_iam_member" "servers_wrap" {
  count         = var.servers_write_keyset ? 1 : 0
  crypto_key_id = google_kms_crypto_key.kek.id
  role          = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
  member        = "serviceAccount:${var.server_service_account}"
}

resource "google_kms_crypto_key_iam_member" "rotator" {
  count         = var.rotator_service_account == null ? 0 : 1
  crypto_key_id = google_kms_crypto_key.kek.id
  role          = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
  member        = "serviceAccount:${var.rotator_service_account}"
}
