// Shared by the check files: a check that cannot run here throws a Skip.
export class Skip extends Error {}
