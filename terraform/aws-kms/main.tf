# A symmetric KMS key (the KEK) with rotation and an explicit key policy, an
# S3 bucket for the keyset document, and a least-privilege IAM policy for the
# MCP servers. Every use of the key must carry stateseal's encryption context.

data "aws_caller_identity" "current" {}
data "aws_partition" "current" {}

locals {
  account_root = "arn:${data.aws_partition.current.partition}:iam::${data.aws_caller_identity.current.account_id}:root"
  keyset_arn   = "${aws_s3_bucket.keyset.arn}/${var.keyset_key}"
  # The copy of the newest document every writer keeps beside it.
  newest_arn = "${aws_s3_bucket.keyset.arn}/${var.keyset_key}.newest"
  # stateseal binds every wrap to {"stateseal:keyset", "stateseal:entry"}; only those keys are allowed.
  context_keys = ["stateseal:keyset", "stateseal:entry"]
}

data "aws_iam_policy_document" "key" {
  # In a key policy, Resource "*" means this key and nothing else; the account statement delegates to IAM as AWS's default policy does.
  # checkov:skip=CKV_AWS_111:Key policy: "*" is the key itself; write actions are limited to key administrators and context-bound use.
  # checkov:skip=CKV_AWS_356:Key policy: "*" is the key itself.
  # checkov:skip=CKV_AWS_109:Key policy: PutKeyPolicy belongs to the named key administrators only.
  statement {
    sid       = "AccountAdministersThroughIAM"
    actions   = ["kms:*"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = [local.account_root]
    }
  }
  statement {
    sid = "KeyAdministrators"
    actions = [
      "kms:Describe*", "kms:Get*", "kms:List*", "kms:EnableKey", "kms:DisableKey",
      "kms:EnableKeyRotation", "kms:PutKeyPolicy", "kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion",
      "kms:TagResource", "kms:UntagResource", "kms:UpdateAlias",
    ]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = var.key_admin_arns
    }
  }
  dynamic "statement" {
    for_each = length(var.server_role_arns) > 0 ? [1] : []
    content {
      sid       = "StatesealServersWithContext"
      actions   = ["kms:GenerateDataKey", "kms:Decrypt"]
      resources = ["*"]
      principals {
        type        = "AWS"
        identifiers = var.server_role_arns
      }
      condition {
        test     = "ForAllValues:StringEquals"
        variable = "kms:EncryptionContextKeys"
        values   = local.context_keys
      }
      condition {
        test     = "Null"
        variable = "kms:EncryptionContext:stateseal:keyset"
        values   = ["false"]
      }
    }
  }
}

resource "aws_kms_key" "kek" {
  description             = "stateseal key-encryption key (wraps requestState data keys)"
  key_usage               = "ENCRYPT_DECRYPT"
  enable_key_rotation     = true
  is_enabled              = true
  deletion_window_in_days = var.deletion_window_in_days
  policy                  = data.aws_iam_policy_document.key.json

  lifecycle {
    prevent_destroy = true
  }
}

resource "aws_kms_alias" "kek" {
  name          = "alias/${var.name}"
  target_key_id = aws_kms_key.kek.key_id
}
