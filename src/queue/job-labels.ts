/**
 * Whose job it is, for the Bull dashboard: the text after the catalog name in a job's name
 * (jobDisplayName). Ids only — a project's id, never its token or secrets. Partition jobs add
 * "partition k of n" (src/runs/partitions.ts partitionLabel).
 */
export function syncRunLabel(run: { projectId: number; importId: number; id: string }): string {
  return `project ${run.projectId} · import ${run.importId} · run ${run.id}`;
}

export function batchImportLabel(projectId: number, importId: string): string {
  return `project ${projectId} · batch import ${importId}`;
}

export function migrationLabel(projectId: number, migrationId: string, step: string): string {
  return `project ${projectId} · migration ${migrationId} · ${step}`;
}
