variable "project" {
  description = "GCP project that holds the key ring."
  type        = string
}

variable "location" {
  description = "KMS location of the key ring (a region, or global)."
  type        = string
  default     = "europe-west1"
}

variable "key_ring" {
  description = "Name of the key ring."
  type        = string
  default     = "stateseal"
}

variable "key_name" {
  description = "Name of the crypto key (the KEK)."
  type        = string
  default     = "stateseal-kek"
}

variable "rotation_period" {
  description = "Cloud KMS rotation period of the key version (old versions keep decrypting)."
  type        = string
  default     = "7776000s"
}

variable "protection_level" {
  description = "SOFTWARE or HSM."
  type        = string
  default     = "HSM"
  validation {
    condition     = contains(["SOFTWARE", "HSM"], var.protection_level)
    error_message = "protection_level must be SOFTWARE or HSM."
  }
}

variable "server_service_account" {
  description = "Email of the service account the MCP servers run as."
  type        = string
}

variable "bucket_name" {
  description = "Name of the Cloud Storage bucket that holds the keyset document."
  type        = string
}

variable "bucket_location" {
  description = "Location of the keyset bucket (a region, dual-region or multi-region)."
  type        = string
  default     = "EU"
}

variable "keyset_object" {
  description = "Object name of the keyset document inside the bucket."
  type        = string
  default     = "stateseal/keyset.json"
}

variable "soft_delete_seconds" {
  description = "How long a deleted object or noncurrent version stays recoverable by soft delete (7 to 90 days)."
  type        = number
  default     = 2592000
  validation {
    condition     = var.soft_delete_seconds >= 604800 && var.soft_delete_seconds <= 7776000
    error_message = "soft_delete_seconds must be between 604800 (7 days) and 7776000 (90 days)."
  }
}

variable "access_log_bucket" {
  description = "Existing bucket that receives the keyset bucket's usage logs."
  type        = string
}

variable "operator_members" {
  description = "IAM members that may create and replace the keyset object (e.g. group:sre@example.com). Without a KMS role they cannot change which keys the fleet uses: the document is authenticated under a key only KEK holders can unwrap. Running `stateseal init` or `rotate` also needs encrypt/decrypt on the key, granted separately."
  type        = list(string)
  default     = []
}

variable "servers_write_keyset" {
  description = "Whether the servers may write the keyset (renewals, rotation by age) and wrap new keys. Default false: servers decrypt and read, and the rotator job (`stateseal rotate --if-due`, rotator_service_account) writes."
  type        = bool
  default     = false
}

variable "rotator_service_account" {
  description = "Email of the service account the keyset rotator job runs as (KMS encrypt/decrypt and keyset writes), or null for none."
  type        = string
  default     = null
  nullable    = true
}
