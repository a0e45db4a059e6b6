//! [`BucketStore`]'s read side ([`SharedFiles`]): a file's manifest, its
//! data from the local cache or through ranged `GET`s, the committed
//! files, and the sweep of expired and orphaned objects.

use super::*;

impl SharedFiles for BucketStore {
    fn manifest(&self, file_name: &str) -> Result<Option<Manifest>, StoreError> {
        if parse_file_name(file_name).is_none() {
            return Ok(None);
        }
        let key = self.manifest_key(file_name);
        let (store, k) = (self.store.clone(), key.clone());
        let get = async move {
            let got = store.get(&k).await?;
            if got.meta.size > MAX_MANIFEST_BYTES {
                return Ok(None);
            }
            got.bytes().await.map(Some)
        };
        match self.bridge.run(file_name, get)? {
            Ok(Some(bytes)) => Ok(Manifest::parse(&bytes, file_name)),
            Ok(None) | Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(Self::remote(&key, e)),
        }
    }

    fn local_copy(&self, file_name: &str, manifest: &Manifest) -> Result<PathBuf, StoreError> {
        if let Some(path) = self.cache.get(file_name, manifest.size) {
            return Ok(path);
        }
        let key = self.data_key(file_name);
        let (store, k) = (self.store.clone(), key.clone());
        let mut stream = self
            .bridge
            .run(file_name, async move { store.get(&k).await })?
            .map_err(|e| Self::remote(&key, e))?
            .into_stream();
        // A copy is cached only when it is what its header says.
        let mut check = ContractCheck::of(manifest);
        self.cache.insert_with(file_name, manifest.size, |out| {
            loop {
                let (s, next) = self.bridge.run(file_name, async move {
                    let next = stream.next().await;
                    (stream, next)
                })?;
                stream = s;
                match next {
                    None => {
                        return match check.take().map(ContractCheck::finish) {
                            Some(Err(detail)) => Err(StoreError::Damaged {
                                object: file_name.to_owned(),
                                detail,
                            }),
                            _ => Ok(()),
                        };
                    }
                    Some(Err(e)) => return Err(Self::remote(&key, e)),
                    Some(Ok(bytes)) => {
                        if let Some(check) = &mut check {
                            check.update(&bytes);
                        }
                        out.write_all(&bytes).map_err(|source| StoreError::Write {
                            path: self.dir.join(file_name),
                            source,
                        })?
                    }
                }
            }
        })
    }

    /// The cached copy when there is one, else ranged `GET`s of the data
    /// object as it is read.
    fn open(
        &self,
        file_name: &str,
        manifest: &Manifest,
    ) -> Result<Box<dyn Read + Send>, StoreError> {
        self.open_at(file_name, manifest, 0)
    }

    /// The cached copy from `offset` when there is one, else ranged
    /// `GET`s from `offset` as it is read.
    fn open_at(
        &self,
        file_name: &str,
        manifest: &Manifest,
        offset: u64,
    ) -> Result<Box<dyn Read + Send>, StoreError> {
        if let Some(path) = self.cache.get(file_name, manifest.size)
            && let Ok(mut file) = std::fs::File::open(path)
            && io::Seek::seek(&mut file, io::SeekFrom::Start(offset)).is_ok()
        {
            return Ok(Box::new(file));
        }
        Ok(Box::new(Ranged::new(
            self.store.clone(),
            (self.data_key(file_name), manifest.size),
            offset,
            self.bridge.clone(),
            ContractCheck::of(manifest),
        )))
    }

    fn committed(&self) -> Result<Vec<String>, StoreError> {
        Ok(self
            .listing()?
            .into_iter()
            .filter_map(|(name, manifest)| manifest.then_some(name))
            .collect())
    }

    fn sweep(&self, now: DateTime<Utc>, ttl: Duration) -> Result<Sweep, StoreError> {
        let mut sweep = Sweep::default();
        let mut data: HashMap<String, bool> = HashMap::new();
        let mut manifests = Vec::new();
        for (name, is_manifest) in self.listing()? {
            if is_manifest {
                manifests.push(name);
            } else {
                data.insert(name, false);
            }
        }
        let expires = |created: DateTime<Utc>| {
            chrono::Duration::from_std(ttl)
                .ok()
                .and_then(|d| created.checked_add_signed(d))
                .unwrap_or(DateTime::<Utc>::MAX_UTC)
        };
        for name in manifests {
            data.insert(name.clone(), true);
            sweep.scanned += 1;
            let Some((_, ulid)) = parse_file_name(&name) else {
                continue;
            };
            let created: DateTime<Utc> = ulid.datetime().into();
            let manifest = match self.manifest(&name) {
                Ok(Some(m)) => m,
                Ok(None) => {
                    sweep.vanished += 1;
                    continue;
                }
                Err(e) => {
                    sweep.errors.push((name, e.to_string()));
                    continue;
                }
            };
            let at = manifest
                .expires_at
                .as_deref()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map_or_else(|| expires(created), |t| t.with_timezone(&Utc));
            if now < at {
                continue;
            }
            let gone = self
                .delete_key(&self.manifest_key(&name))
                .and_then(|()| self.delete_key(&self.data_key(&name)));
            match gone {
                Ok(()) => sweep.deleted.push((name, created)),
                Err(e) => sweep.errors.push((name, e.to_string())),
            }
        }
        for (name, committed) in data {
            if committed {
                continue;
            }
            let Some((_, ulid)) = parse_file_name(&name) else {
                continue;
            };
            sweep.scanned += 1;
            if now < expires(ulid.datetime().into()) {
                continue;
            }
            match self.delete_key(&self.data_key(&name)) {
                Ok(()) => sweep.orphans += 1,
                Err(e) => sweep.errors.push((name, e.to_string())),
            }
        }
        Ok(sweep)
    }
}
