/**
 * Edits a written segment version on disk the way another build would have left it, keeping the
 * manifest's checksum consistent so that only the edited property differs.
 */
import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";

/** Sets the format version in `lexical.bin`'s header (as an older or newer analyzer would write it). */
export async function setLexicalFormat(versionDir: string, version: number): Promise<void> {
  const file = path.join(versionDir, "lexical.bin");
  const bytes = await readFile(file);
  bytes.writeUInt32LE(version, 4);
  await writeFile(file, bytes);
  const manifestFile = path.join(versionDir, "manifest.json");
  const manifest = JSON.parse(await readFile(manifestFile, "utf8")) as { files: Record<string, { sha256: string }> };
  manifest.files["lexical.bin"]!.sha256 = createHash("sha256").update(bytes).digest("hex");
  await writeFile(manifestFile, JSON.stringify(manifest));
}
