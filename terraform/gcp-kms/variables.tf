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
