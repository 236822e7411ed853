/* The layer's lookup table: a fixed array of buckets, each a chain of nodes.
 * Readers walk a chain with acquire loads and no lock; writers (put, take)
 * hold the map's mutex. A node is never freed or moved to another bucket
 * while the map lives: a removed node's key becomes 0 and the node is reused
 * by a later put into the same bucket, so a reader never strays into another
 * chain. A key is looked up only by a thread that may use the object
 * (Vulkan's external synchronisation), so a value is not freed under it. */
#include "layer.h"

#include <stdlib.h>

static uint32_t bucket_of(const lyr_map *m, uint64_t key)
{
    key ^= key >> 33;
    key *= UINT64_C(0xff51afd7ed558ccd);
    key ^= key >> 33;
    return (uint32_t)key & m->mask;
}

bool lyr_map_init(lyr_map *m, uint32_t buckets_pow2)
{
    m->buckets = calloc(buckets_pow2, sizeof *m->buckets);
    m->mask = buckets_pow2 - 1u;
    m->all = NULL;
    pthread_mutex_init(&m->lock, NULL);
    return m->buckets != NULL;
}

void lyr_map_free(lyr_map *m, void (*free_val)(void *))
{
    lyr_node *n = m->all;
    while (n != NULL) {
        lyr_node *next = n->all;
        void *v = atomic_load(&n->val);
        if (atomic_load(&n->key) != 0 && v != NULL && free_val != NULL) {
            free_val(v);
        }
        free(n);
        n = next;
    }
    free((void *)m->buckets);
    m->buckets = NULL;
    m->all = NULL;
    pthread_mutex_destroy(&m->lock);
}

bool lyr_map_put(lyr_map *m, uint64_t key, void *val)
{
    if (key == 0 || m->buckets == NULL) {
        return false;
    }
    uint32_t b = bucket_of(m, key);
    pthread_mutex_lock(&m->lock);
    lyr_node *free_node = NULL;
    for (lyr_node *n = atomic_load_explicit(&m->buckets[b], memory_order_acquire); n != NULL;
         n = atomic_load_explicit(&n->next, memory_order_acquire)) {
        uint64_t k = atomic_load_explicit(&n->key, memory_order_relaxed);
        if (k == key) {
            atomic_store_explicit(&n->val, val, memory_order_release);
            pthread_mutex_unlock(&m->lock);
            return true;
        }
        if (k == 0 && free_node == NULL) {
            free_node = n;
        }
    }
    if (free_node != NULL) {
        atomic_store_explicit(&free_node->val, val, memory_order_relaxed);
        atomic_store_explicit(&free_node->key, key, memory_order_release);
        pthread_mutex_unlock(&m->lock);
        return true;
    }
    lyr_node *n = calloc(1, sizeof *n);
    if (n == NULL) {
        pthread_mutex_unlock(&m->lock);
        return false;
    }
    atomic_init(&n->val, val);
    atomic_init(&n->key, key);
    atomic_init(&n->next, atomic_load_explicit(&m->buckets[b], memory_order_relaxed));
    n->all = m->all;
    m->all = n;
    atomic_store_explicit(&m->buckets[b], n, memory_order_release);
    pthread_mutex_unlock(&m->lock);
    return true;
}

void *lyr_map_get(const lyr_map *m, uint64_t key)
{
    if (key == 0 || m->buckets == NULL) {
        return NULL;
    }
    for (lyr_node *n = atomic_load_explicit(&m->buckets[bucket_of(m, key)], memory_order_acquire);
         n != NULL; n = atomic_load_explicit(&n->next, memory_order_acquire)) {
        if (atomic_load_explicit(&n->key, memory_order_acquire) == key) {
            return atomic_load_explicit(&n->val, memory_order_acquire);
        }
    }
    return NULL;
}

void *lyr_map_take(lyr_map *m, uint64_t key)
{
    if (key == 0 || m->buckets == NULL) {
        return NULL;
    }
    void *v = NULL;
    pthread_mutex_lock(&m->lock);
    for (lyr_node *n = atomic_load_explicit(&m->buckets[bucket_of(m, key)], memory_order_acquire);
         n != NULL; n = atomic_load_explicit(&n->next, memory_order_acquire)) {
        if (atomic_load_explicit(&n->key, memory_order_relaxed) == key) {
            v = atomic_load_explicit(&n->val, memory_order_relaxed);
            atomic_store_explicit(&n->key, 0, memory_order_release);
            atomic_store_explicit(&n->val, NULL, memory_order_relaxed);
            break;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return v;
}

void lyr_map_each(lyr_map *m, void (*fn)(uint64_t key, void *val, void *user), void *user)
{
    if (m->buckets == NULL) {
        return;
    }
    pthread_mutex_lock(&m->lock);
    for (lyr_node *n = m->all; n != NULL; n = n->all) {
        uint64_t k = atomic_load_explicit(&n->key, memory_order_relaxed);
        if (k != 0) {
            fn(k, atomic_load_explicit(&n->val, memory_order_relaxed), user);
        }
    }
    pthread_mutex_unlock(&m->lock);
}
