/** The slot pool a Worker consults when it is one shard's worker of a ShardedWorker (src/cluster/sharded-worker.ts). */

/**
 * @internal Concurrency shared by the per-shard workers of a ShardedWorker (worker.ts calls
 * these). `load` = a worker's running plus reserved jobs.
 */
export interface SlotPool {
  join(w: object, hooks: { load(): number; poke(): void }): void;
  /** Slots `w` may claim now (own = its own free capacity); 0 makes it wait for a poke. */
  free(w: object, own: number): number;
  /** Whether a settle call of `w` may claim the freed slot's next job from w's own shard. */
  mayRefetch(w: object): boolean;
  /** A claim of `w` returned `got` of `asked` jobs (fewer: w's shard has no more ready work). */
  claimed(w: object, asked: number, got: number): void;
  /** `w` gave a slot back (a job settled or a reservation was returned). */
  released(w: object): void;
}
