#!/bin/sh
# The RBAC is in docs/kubernetes.md, and the README's Running on Kubernetes section
# says more; docs/guide.md#speed is fine, and so is
# (docs/guide.md,
# "Speed"), but not (README, "Broken
# page").
