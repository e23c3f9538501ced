import { get } from '../api.js';
import { href } from '../route.js';
import type { DeadLetterQueueSummary } from '../types.js';
import { count } from './format.js';
import { useData } from './use-data.js';

/** The registered queues, each a link to `to(queue)`. */
export function QueuePicker({ title, to }: { title: string; to: (queue: string) => string[] }) {
  const { data, error } = useData(() => get<{ queues: DeadLetterQueueSummary[] }>('/queues'), 'queues');
  return (
    <section aria-labelledby="picker-title">
      <h1 id="picker-title">{title}</h1>
      {error && <p role="alert">{error}</p>}
      {data && data.queues.length === 0 && <p>No queue has registered with the dead-letter store.</p>}
      {data && data.queues.length > 0 && (
        <ul class="queues">
          {data.queues.map((q) => (
            <li key={q.queue}>
              <a href={href(to(q.queue))}>{q.queue}</a> ({count(q.count)} records)
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
