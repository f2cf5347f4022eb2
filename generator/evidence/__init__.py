"""The evidence stage: signed in-toto statements in Sigstore bundles, verified offline.

Modules, in the order data flows:
- `model`: the records (Statement, SignerPolicy, TrustRoot, VerifiedEvidence, RejectedEvidence).
- `statement`: in-toto Statement parsing, our scale-qualification/v1 predicate, upstream's
  recipe-evidence/v1|v2|v3.
- `policy`: catalog/signers.yaml.
- `trustroot`: public-good (vendored, pinned), demo, or a file.
- `store`: where evidence files live and reading them.
- `verify`: `verify_evidence(files, trust_roots=, policy=, current_digests=)` (pure).
- `stage`: `verify_stage(paths, catalog_dir=, trust_roots=, ...)`: the whole stage in one call,
  for `evidence verify`, `status`, `build` and `validate --evidence`.
- `report`: text and JSON output.
- `sign`: keyless (CI) and offline (demo) signing; `testroot`: the offline authority.
"""

from generator.evidence.model import (
    Evidence,
    EvidenceFile,
    FailureClass,
    RejectedEvidence,
    RunState,
    SignerClass,
    SignerPolicy,
    Statement,
    TrustRoot,
    VerifiedEvidence,
)

__all__ = [
    "Evidence",
    "EvidenceFile",
    "FailureClass",
    "RejectedEvidence",
    "RunState",
    "SignerClass",
    "SignerPolicy",
    "Statement",
    "TrustRoot",
    "VerifiedEvidence",
]
