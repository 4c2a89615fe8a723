variable "name" {
  description = "Prefix for the key alias, bucket and policy names."
  type        = string
  default     = "stateseal"
}

variable "bucket_name" {
  description = "Name of the S3 bucket that holds the keyset document (globally unique)."
  type        = string
}

variable "keyset_key" {
  description = "Object key of the keyset document inside the bucket."
  type        = string
  default     = "mcp/keyset.json"
}

variable "server_role_arns" {
  description = "IAM role ARNs of the MCP servers, the keyset rotator and operators allowed to use the key through the key policy (each still needs its IAM policy: server_policy_arn or rotator_policy_arn)."
  type        = list(string)
  default     = []
}

variable "key_admin_arns" {
  description = "IAM principals that administer the key (rotate, disable, schedule deletion); never use it."
  type        = list(string)
}

variable "deletion_window_in_days" {
  description = "Waiting period before a scheduled key deletion takes effect (7-30)."
  type        = number
  default     = 30
}

variable "access_log_bucket" {
  description = "Existing bucket that receives the keyset bucket's S3 server access logs."
  type        = string
}
