variable "transit_mount" {
  description = "Path of the transit secrets engine that wraps stateseal data keys."
  type        = string
  default     = "transit"
}

variable "key_name" {
  description = "Name of the transit key (the KEK)."
  type        = string
  default     = "stateseal"
}

variable "kv_mount" {
  description = "Path of the KV v2 mount that holds the keyset document."
  type        = string
  default     = "stateseal-kv"
}

variable "keyset_path" {
  description = "Secret path of the keyset document inside the KV v2 mount."
  type        = string
  default     = "mcp/keyset"
}

variable "policy_name" {
  description = "Name of the least-privilege policy for the MCP servers."
  type        = string
  default     = "stateseal-server"
}

variable "approle_mount" {
  description = "Path of an existing AppRole auth mount, or null to skip the AppRole role."
  type        = string
  default     = "approle"
  nullable    = true
}

variable "kubernetes_mount" {
  description = "Path of an existing Kubernetes auth mount, or null to skip the Kubernetes role."
  type        = string
  default     = null
  nullable    = true
}

variable "kubernetes_service_accounts" {
  description = "Service account names the Kubernetes role accepts."
  type        = list(string)
  default     = ["mcp-server"]
}

variable "kubernetes_namespaces" {
  description = "Namespaces the Kubernetes role accepts."
  type        = list(string)
  default     = ["default"]
}

variable "token_ttl" {
  description = "Lifetime in seconds of tokens issued to the servers (stateseal renews them at a third left)."
  type        = number
  default     = 3600
}

variable "token_max_ttl" {
  description = "Longest lifetime in seconds of a renewed token; stateseal logs in again after it."
  type        = number
  default     = 86400
}

variable "key_auto_rotate_period" {
  description = "Automatic rotation period of the transit key in seconds (0 disables). Old versions keep decrypting."
  type        = number
  default     = 2592000
}

variable "servers_write_keyset" {
  description = "Whether the servers may write the keyset (renewals, rotation by age). Default false: servers read, and the rotator job (`stateseal rotate --if-due`, role <policy_name>-rotator) writes."
  type        = bool
  default     = false
}

variable "rotator_service_accounts" {
  description = "Service account names the rotator's Kubernetes role accepts."
  type        = list(string)
  default     = ["stateseal-keyset-rotator"]
}
