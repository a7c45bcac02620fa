"""The policy pack: run by `pulumi preview --policy-pack policy`."""

from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)
from rules import credentials_in_configmap, readable_secret_volumes


def _no_credentials_in_configmaps(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for problem in credentials_in_configmap(args.resource_type, args.props):
        report_violation(problem, None)


def _secret_volumes_private(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for problem in readable_secret_volumes(args.resource_type, args.props):
        report_violation(problem, None)


PolicyPack(
    name="openstack-nova",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=[
        ResourceValidationPolicy(
            name="no-credentials-in-configmaps",
            description="Config files that set a password, secret, token, key or a URL with credentials "
                        "are kept in Secrets, never ConfigMaps.",
            validate=_no_credentials_in_configmaps,
        ),
        ResourceValidationPolicy(
            name="secret-volumes-private",
            description="Secret and projected volumes set a defaultMode that others cannot read.",
            validate=_secret_volumes_private,
        ),
    ],
)
