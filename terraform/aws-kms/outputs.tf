output "kek_uri" {
  description = "The KEK URI for `stateseal init --kek` (the alias ARN: the key behind it can change)."
  value       = "aws-kms://${aws_kms_alias.kek.arn}"
}

output "store_uri" {
  description = "The keyset store URI for `stateseal init --store` and the servers."
  value       = "s3://${aws_s3_bucket.keyset.bucket}/${var.keyset_key}"
}

output "server_policy_arn" {
  description = "Attach to the MCP servers' roles: decrypt data keys and read the keyset (servers that also write it get rotator_policy_arn too)."
  value       = aws_iam_policy.server.arn
}

output "rotator_policy_arn" {
  description = "Attach to the keyset rotator's role (the scheduled `stateseal rotate --if-due`)."
  value       = aws_iam_policy.rotator.arn
}
