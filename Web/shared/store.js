// IndexedDB, shared by the resident app's page and its service worker (same origin, same
// database): the session (so a notification action can be sent with the tab closed) and
// the durable action queue. Two object stores:
//   kv      — small named values ("session")
//   actions — one record per tap, keyed by its Idempotency-Key
// Every call opens a short transaction; nothing is cached in memory, so the page and the
// worker always read what the other wrote.

const NAME = "portaria";
const VERSION = 1;
let opening = null;

function open() {
  if (!opening) {
    opening = new Promise((resolve, reject) => {
      const request = indexedDB.open(NAME, VERSION);
      request.onupgradeneeded = () => {
        const db = request.result;
        if (!db.objectStoreNames.contains("kv")) db.createObjectStore("kv");
        if (!db.objectStoreNames.contains("actions")) db.createObjectStore("actions", { keyPath: "key" });
      };
      request.onsuccess = () => {
        const db = request.result;
        // Another context upgrading the schema: let it, and open again next time.
        db.onversionchange = () => { db.close(); opening = null; };
        resolve(db);
      };
      request.onerror = () => { opening = null; reject(request.error); };
      request.onblocked = () => { opening = null; reject(new Error("IndexedDB blocked")); };
    });
  }
  return opening;
}

/** Runs `body(store)` in one transaction; resolves with what `body`'s last request gave, after commit. */
async function transact(storeName, mode, body) {
  const db = await open();
  return new Promise((resolve, reject) => {
    const tx = db.transaction(storeName, mode);
    let result;
    const request = body(tx.objectStore(storeName));
    if (request) request.onsuccess = () => { result = request.result; };
    tx.oncomplete = () => resolve(result);
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error || new Error("transaction aborted"));
  });
}

export function getValue(name) {
  return transact("kv", "readonly", (store) => store.get(name));
}

export function setValue(name, value) {
  return transact("kv", "readwrite", (store) => store.put(value, name));
}

export function deleteValue(name) {
  return transact("kv", "readwrite", (store) => store.delete(name));
}

export function getAction(key) {
  return transact("actions", "readonly", (store) => store.get(key));
}

export function putAction(record) {
  return transact("actions", "readwrite", (store) => store.put(record));
}

export async function allActions() {
  return (await transact("actions", "readonly", (store) => store.getAll())) || [];
}

export function deleteAction(key) {
  return transact("actions", "readwrite", (store) => store.delete(key));
}
