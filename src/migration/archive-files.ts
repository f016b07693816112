/**
 * Where downloaded export archives live between the count pass and the load pass:
 * `MIGRATION_TMP_DIR/<migration id>/<day>-<window>.zip`. The count pass downloads each window
 * once; the load pass reads the same file (or downloads again when it runs on another machine).
 */
import fs from 'node:fs';
import path from 'node:path';

export function migrationDir(tmpDir: string, migrationId: string): string {
  return path.resolve(tmpDir, migrationId);
}

export function archivePath(tmpDir: string, migrationId: string, day: string, windowKey: string): string {
  return path.join(migrationDir(tmpDir, migrationId), `${day}-${windowKey}.zip`);
}

export function removeArchive(file: string): void {
  fs.rmSync(file, { force: true });
}

export function removeMigrationFiles(tmpDir: string, migrationId: string): void {
  fs.rmSync(migrationDir(tmpDir, migrationId), { recursive: true, force: true });
}
